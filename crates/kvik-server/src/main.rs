//! `kvik-server [config-file] [--directive value ...]`

use kvik_server::{logging, server};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut config = kvik_config::Config::default();
    let mut i = 0;
    while i < args.len() {
        let name = args[i].trim_start_matches("--");
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match name {
            "port" => config.port = value.parse().unwrap_or(6379),
            "server-threads" | "io-threads" => config.server_threads = value.parse().unwrap_or(1),
            "requirepass" => config.requirepass = Some(value),
            "protected-mode" => config.protected_mode = value == "yes",
            "enable-debug-command" => config.enable_debug_command = value,
            _ => {}
        }
        i += 2;
    }
    logging::notice("Server initialized");
    let running = match server::launch(config, None) {
        Ok(r) => r,
        Err(e) => {
            logging::warning(&e.to_string());
            std::process::exit(1);
        }
    };
    logging::notice("Ready to accept connections");
    running.join();
    logging::warning("Redis is now ready to exit, bye bye...");
}
