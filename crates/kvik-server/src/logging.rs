//! Logging (interim: plain stderr lines until the Redis-format logger lands).

pub fn warning(msg: &str) {
    eprintln!("{}:M # {msg}", std::process::id());
}

pub fn notice(msg: &str) {
    eprintln!("{}:M * {msg}", std::process::id());
}

pub fn verbose(msg: &str) {
    let _ = msg;
}
