//! The Prometheus endpoint: `GET /metrics` on `metrics-bind`:`metrics-port`, served
//! by a thread of its own so that a scrape never runs on, or waits for, an event
//! loop. Off unless `metrics-port` is set.
//!
//! The numbers are INFO's: the text is built from the same report INFO prints, read
//! the way redis_exporter reads it, under the metric names redis_exporter publishes,
//! so that existing dashboards and alerts work unchanged (see [`exposition`]). A
//! scrape takes no lock a command takes, except each shard's for a moment to count
//! its keys, as DBSIZE does.
//!
//! Owns the listening socket and the HTTP exchange (through `tiny_http`: HTTP/1.1
//! parsing is not this server's business). Must not touch clients or the keyspace
//! beyond reading what INFO reads.

mod exposition;

use crate::server::Server;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the thread looks up from waiting for a request to see whether the
/// server is shutting down.
const SHUTDOWN_CHECK: Duration = Duration::from_millis(100);

/// The content type of Prometheus's text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Bind the endpoint and start its thread, when `metrics-port` asks for one.
pub fn start(server: &Arc<Server>) -> std::io::Result<Option<JoinHandle<()>>> {
    let (bind, port) = {
        let config = server.config.read();
        (config.metrics_bind.clone(), config.metrics_port)
    };
    if port == 0 {
        return Ok(None);
    }
    let http = tiny_http::Server::http((bind.as_str(), port)).map_err(|e| {
        std::io::Error::other(format!(
            "Could not create the metrics listening socket {bind}:{port}: {e}"
        ))
    })?;
    crate::log_notice!("Metrics endpoint listening on http://{bind}:{port}/metrics");
    let server = server.clone();
    let thread = std::thread::Builder::new()
        .name("kvik-metrics".into())
        .spawn(move || serve(&server, &http))?;
    Ok(Some(thread))
}

fn serve(server: &Server, http: &tiny_http::Server) {
    while !server.shutdown_requested.load(Ordering::Acquire) {
        match http.recv_timeout(SHUTDOWN_CHECK) {
            Ok(Some(request)) => answer(server, request),
            Ok(None) => {}
            Err(e) => {
                crate::log_warning!("Metrics endpoint failed: {e}");
                return;
            }
        }
    }
}

/// One exchange. A client that goes away mid-answer costs nothing but its answer.
fn answer(server: &Server, request: tiny_http::Request) {
    let path = request.url().split('?').next().unwrap_or_default();
    let response = match (request.method(), path) {
        (tiny_http::Method::Get, "/metrics") => {
            let header = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE)
                .expect("a valid header");
            tiny_http::Response::from_string(exposition::render(server)).with_header(header)
        }
        (tiny_http::Method::Get, _) => {
            tiny_http::Response::from_string("Not found: metrics are at /metrics\n")
                .with_status_code(404)
        }
        _ => tiny_http::Response::from_string("Only GET is served\n").with_status_code(405),
    };
    let _ = request.respond(response);
}
