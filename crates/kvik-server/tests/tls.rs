//! TLS on the `tls-port`, over real sockets, with certificates made for the test by
//! the `openssl` command: client certificates required / optional / not asked for,
//! a certificate from another CA refused, a plain-text client and a stalled
//! handshake dropped without holding up the thread, encrypted keys, the settings
//! kvik refuses, CONFIG SET reloading the certificate, Debian's redis-cli and
//! redis-benchmark with `--tls`, redis-py with `ssl=True`, and replication over TLS
//! (kvik replica of kvik, redis-server replica of kvik, kvik replica of
//! redis-server).

mod support;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use support::{free_port, redis_server_or_skip, scratch_dir, wait_for, RealRedis, TestServer};

/// Certificates for one test: two CAs (the trusted one and a stranger), a server
/// certificate (also good as a client's, as a replica uses it), a client
/// certificate, one from the other CA, and the server key encrypted.
struct Pki {
    dir: PathBuf,
}

const KEY_PASS: &str = "s3cret";

impl Pki {
    fn new() -> Pki {
        let dir = scratch_dir("tls-pki");
        let pki = Pki { dir };
        pki.ca("ca");
        pki.ca("other-ca");
        pki.leaf("server", "ca");
        pki.leaf("client", "ca");
        pki.leaf("stranger", "other-ca");
        pki.leaf("server2", "other-ca");
        openssl(
            &pki.dir,
            &[
                "pkcs8",
                "-topk8",
                "-in",
                "server.key",
                "-out",
                "server-enc.key",
                "-passout",
                &format!("pass:{KEY_PASS}"),
            ],
        );
        pki
    }

    fn ca(&self, name: &str) {
        openssl(
            &self.dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "30",
                "-subj",
                &format!("/CN=kvik test {name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.crt"),
            ],
        );
    }

    fn leaf(&self, name: &str, ca: &str) {
        std::fs::write(
            self.dir.join("leaf.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .unwrap();
        openssl(
            &self.dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/CN={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{ca}.crt"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-days",
                "30",
                "-extfile",
                "leaf.ext",
                "-out",
                &format!("{name}.crt"),
            ],
        );
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).to_string_lossy().into_owned()
    }

    /// The server settings: its certificate and the trusted CA, on `tls_port`.
    fn server_args(&self, tls_port: u16) -> Vec<String> {
        vec![
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            self.path("server.crt"),
            "--tls-key-file".into(),
            self.path("server.key"),
            "--tls-ca-cert-file".into(),
            self.path("ca.crt"),
        ]
    }

    /// A client trusting `ca`, showing the certificate `identity` (none: `None`).
    fn client(&self, ca: &str, identity: Option<&str>) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(self.path(&format!("{ca}.crt"))).unwrap() {
            roots.add(cert.unwrap()).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some(name) => {
                let certs = CertificateDer::pem_file_iter(self.path(&format!("{name}.crt")))
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
                let key = PrivateKeyDer::from_pem_file(self.path(&format!("{name}.key"))).unwrap();
                builder.with_client_auth_cert(certs, key).unwrap()
            }
        };
        Arc::new(config)
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command (apt install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Send `command` (inline) over TLS to `port` and read one reply line: the line,
/// or why the session failed.
fn tls_query(
    port: u16,
    config: Arc<rustls::ClientConfig>,
    command: &str,
) -> Result<String, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(support::IO_TIMEOUT)).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let session = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let mut tls = rustls::StreamOwned::new(session, tcp);
    tls.write_all(format!("{command}\r\n").as_bytes())
        .map_err(|e| e.to_string())?;
    read_line(&mut tls)
}

fn read_line(stream: &mut impl Read) -> Result<String, String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(0) => return Err(format!("closed after {:?}", String::from_utf8_lossy(&line))),
            Ok(_) => line.push(byte[0]),
            Err(e) => return Err(e.to_string()),
        }
    }
    line.truncate(line.len() - 2);
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// kvik with TLS on a port of its own beside its plain port, plus `extra`.
fn start_kvik(pki: &Pki, extra: &[&str]) -> (TestServer, u16) {
    let tls_port = free_port();
    let mut args = pki.server_args(tls_port);
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (TestServer::start(&args), tls_port)
}

#[test]
fn client_certificates_required_by_default() {
    let pki = Pki::new();
    let (_server, port) = start_kvik(&pki, &[]);
    assert_eq!(
        tls_query(port, pki.client("ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    let without = tls_query(port, pki.client("ca", None), "PING");
    assert!(without.is_err(), "no client certificate: {without:?}");
    let stranger = tls_query(port, pki.client("ca", Some("stranger")), "PING");
    assert!(stranger.is_err(), "certificate of another CA: {stranger:?}");
}

#[test]
fn client_certificates_optional() {
    let pki = Pki::new();
    let (_server, port) = start_kvik(&pki, &["--tls-auth-clients", "optional"]);
    assert_eq!(
        tls_query(port, pki.client("ca", None), "PING"),
        Ok("+PONG".into())
    );
    assert_eq!(
        tls_query(port, pki.client("ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    let stranger = tls_query(port, pki.client("ca", Some("stranger")), "PING");
    assert!(
        stranger.is_err(),
        "a certificate shown is still checked: {stranger:?}"
    );
}

#[test]
fn client_certificates_not_asked_for() {
    let pki = Pki::new();
    let (_server, port) = start_kvik(&pki, &["--tls-auth-clients", "no"]);
    assert_eq!(
        tls_query(port, pki.client("ca", None), "PING"),
        Ok("+PONG".into())
    );
}

#[test]
fn server_certificate_from_an_unknown_ca_is_refused_by_the_client() {
    let pki = Pki::new();
    let (_server, port) = start_kvik(&pki, &[]);
    let wrong = tls_query(port, pki.client("other-ca", Some("client")), "PING");
    assert!(
        wrong.is_err(),
        "the client trusts only another CA: {wrong:?}"
    );
}

#[test]
fn plain_text_and_stalled_handshakes_do_not_hold_up_the_thread() {
    let pki = Pki::new();
    // One server thread: anything that blocked it would block the TLS client below.
    let (server, port) = start_kvik(&pki, &["--server-threads", "1"]);
    let _stalled = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut half = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // The first bytes of a ClientHello record, and nothing more.
    half.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain.set_read_timeout(Some(support::IO_TIMEOUT)).unwrap();
    plain.write_all(b"PING\r\n").unwrap();
    let mut got = Vec::new();
    // Dropped: at most a TLS alert comes back, never a reply, then the end.
    let _ = plain.read_to_end(&mut got);
    assert!(
        !got.windows(5).any(|w| w == b"+PONG"),
        "plain text served: {got:?}"
    );
    assert_eq!(
        tls_query(port, pki.client("ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    let mut c = server.client();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 0, "the plain port serves on");
}

#[test]
fn tls_port_alone_with_port_zero() {
    let pki = Pki::new();
    let tls_port = free_port();
    let dir = scratch_dir("tls-only");
    let mut args = pki.server_args(tls_port);
    args.extend(["--port", "0", "--save", "", "--bind", "127.0.0.1"].map(String::from));
    let mut child = Command::new(support::kvik_server_path())
        .args(&args)
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = pki.client("ca", Some("client"));
    wait_for("the TLS port to answer", || {
        tls_query(tls_port, client.clone(), "PING").is_ok_and(|r| r == "+PONG")
    });
    assert_eq!(
        tls_query(tls_port, client, "CONFIG GET port"),
        Ok("*2".into())
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn encrypted_key_with_its_passphrase() {
    let pki = Pki::new();
    let key = pki.path("server-enc.key");
    let (_server, port) = start_kvik(
        &pki,
        &["--tls-key-file", &key, "--tls-key-file-pass", KEY_PASS],
    );
    assert_eq!(
        tls_query(port, pki.client("ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    let wrong = TestServer::try_start(&[
        "--tls-port",
        &free_port().to_string(),
        "--tls-cert-file",
        &pki.path("server.crt"),
        "--tls-key-file",
        &key,
        "--tls-key-file-pass",
        "wrong",
        "--tls-ca-cert-file",
        &pki.path("ca.crt"),
    ]);
    let err = wrong.err().expect("a wrong passphrase stops the start");
    assert!(err.contains("tls-key-file"), "{err}");
}

/// Start kvik with `extra` expecting it to refuse; what it printed.
fn refused_start(pki: &Pki, extra: &[&str]) -> String {
    let mut args = pki.server_args(free_port());
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match TestServer::try_start(&args) {
        Ok(_) => panic!("started with {extra:?}"),
        Err(e) => e,
    }
}

#[test]
fn settings_rustls_cannot_honour_are_refused_by_name() {
    let pki = Pki::new();
    let err = refused_start(&pki, &["--tls-protocols", "TLSv1.1 TLSv1.2"]);
    assert!(
        err.contains("tls-protocols: TLSv1.1 is not supported"),
        "{err}"
    );
    let err = refused_start(&pki, &["--tls-ciphersuites", "TLS_AES_128_CCM_SHA256"]);
    assert!(
        err.contains("tls-ciphersuites: 'TLS_AES_128_CCM_SHA256'"),
        "{err}"
    );
    let err = refused_start(&pki, &["--tls-ciphers", "DHE-RSA-AES256-SHA"]);
    assert!(err.contains("tls-ciphers: 'DHE-RSA-AES256-SHA'"), "{err}");
    // Refused even while nothing uses TLS: it never could work.
    let plain = TestServer::start(&[]);
    let mut c = plain.client();
    let err = redis::cmd("CONFIG")
        .arg(&["SET", "tls-protocols", "TLSv1"])
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "(possibly related to argument 'tls-protocols') - Unable to update TLS configuration"
        ),
        "{err}"
    );
}

#[test]
fn protocols_and_suites_that_rustls_has_are_honoured() {
    let pki = Pki::new();
    let (_server, port) = start_kvik(
        &pki,
        &[
            "--tls-protocols",
            "TLSv1.2",
            "--tls-ciphers",
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            "--tls-prefer-server-ciphers",
            "yes",
        ],
    );
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let session = rustls::ClientConnection::new(
        pki.client("ca", Some("client")),
        ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut tls = rustls::StreamOwned::new(session, tcp);
    tls.write_all(b"PING\r\n").unwrap();
    assert_eq!(read_line(&mut tls), Ok("+PONG".into()));
    assert_eq!(
        tls.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    assert_eq!(
        tls.conn.negotiated_cipher_suite().map(|s| s.suite()),
        Some(rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
    );
}

#[test]
fn config_set_reloads_the_certificate() {
    let pki = Pki::new();
    let (server, port) = start_kvik(&pki, &[]);
    let mut c = server.client();
    // A file that does not load: an error, and the certificate in force stays.
    let err = redis::cmd("CONFIG")
        .arg(&["SET", "tls-cert-file", "/nonexistent/cert.pem"])
        .query::<String>(&mut c)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Unable to update TLS configuration"),
        "{err}"
    );
    assert_eq!(
        tls_query(port, pki.client("ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    // A certificate from the other CA: new handshakes show it.
    let _: () = redis::cmd("CONFIG")
        .arg(&[
            "SET",
            "tls-cert-file",
            &pki.path("server2.crt"),
            "tls-key-file",
            &pki.path("server2.key"),
        ])
        .query(&mut c)
        .unwrap();
    assert!(tls_query(port, pki.client("ca", Some("client")), "PING").is_err());
    assert_eq!(
        tls_query(port, pki.client("other-ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    let got: Vec<String> = redis::cmd("CONFIG")
        .arg(&["GET", "tls-cert-file"])
        .query(&mut c)
        .unwrap();
    assert_eq!(got[1], pki.path("server2.crt"));
}

#[test]
fn config_set_tls_port_listens_there() {
    let pki = Pki::new();
    let (server, port) = start_kvik(&pki, &[]);
    let mut c = server.client();
    let moved = free_port();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "tls-port", &moved.to_string()])
        .query(&mut c)
        .unwrap();
    assert_eq!(
        tls_query(moved, pki.client("ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    wait_for("the old TLS port to close", || {
        TcpStream::connect(("127.0.0.1", port)).is_err()
    });
}

fn redis_cli(pki: &Pki, port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["--tls", "--cacert", &pki.path("ca.crt")])
        .args([
            "--cert",
            &pki.path("client.crt"),
            "--key",
            &pki.path("client.key"),
        ])
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn redis_cli_and_redis_benchmark_over_tls() {
    if redis_server_or_skip().is_none() {
        return;
    }
    let pki = Pki::new();
    let (_server, port) = start_kvik(&pki, &[]);
    assert_eq!(redis_cli(&pki, port, &["SET", "greeting", "hello"]), "OK");
    assert_eq!(redis_cli(&pki, port, &["GET", "greeting"]), "hello");
    let out = Command::new("redis-benchmark")
        .args(["--tls", "--cacert", &pki.path("ca.crt")])
        .args([
            "--cert",
            &pki.path("client.crt"),
            "--key",
            &pki.path("client.key"),
        ])
        .args([
            "-p",
            &port.to_string(),
            "-n",
            "2000",
            "-c",
            "4",
            "-t",
            "set,get",
            "-q",
        ])
        .output()
        .expect("redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("SET: ") && text.contains("GET: "), "{text}");
    assert_eq!(redis_cli(&pki, port, &["DBSIZE"]), "2");
}

#[test]
fn redis_py_with_ssl() {
    // The python3 on PATH (perhaps pyenv's), else Debian's (python3-redis).
    let python = ["python3", "/usr/bin/python3"].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import redis"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    let Some(python) = python else {
        let required =
            std::env::var("KVIK_REQUIRE_CLIENTS").is_ok_and(|v| !v.is_empty() && v != "0");
        assert!(
            !required,
            "python3's redis module is missing (apt install python3-redis)"
        );
        println!("SKIPPED: python3's redis module is missing");
        return;
    };
    let pki = Pki::new();
    let (_server, port) = start_kvik(&pki, &[]);
    let script = format!(
        "import redis\n\
         r = redis.Redis(host='localhost', port={port}, ssl=True, ssl_ca_certs='{ca}', \
         ssl_certfile='{cert}', ssl_keyfile='{key}')\n\
         r.set('k', 'v')\n\
         p = r.pipeline()\n\
         for i in range(100):\n    p.incr('n')\n\
         p.execute()\n\
         print(r.get('k').decode(), r.get('n').decode())\n",
        ca = pki.path("ca.crt"),
        cert = pki.path("client.crt"),
        key = pki.path("client.key"),
    );
    let out = Command::new(python).args(["-c", &script]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "v 100");
}

/// The settings a replica needs to follow a master over TLS.
fn replica_args(pki: &Pki, master_tls_port: u16) -> Vec<String> {
    let mut args = pki.server_args(free_port());
    args.extend(
        [
            "--tls-replication",
            "yes",
            "--replicaof",
            "127.0.0.1",
            &master_tls_port.to_string(),
        ]
        .map(String::from),
    );
    args
}

fn fill(master: &mut redis::Connection, keys: usize) {
    for i in 0..keys {
        let _: () = redis::cmd("SET")
            .arg(format!("key:{i}"))
            .arg(i)
            .query(master)
            .unwrap();
    }
}

fn wait_for_keys(replica: &mut redis::Connection, keys: i64) {
    wait_for("the replica to catch up", || {
        redis::cmd("DBSIZE").query::<i64>(replica).ok() == Some(keys)
    });
}

#[test]
fn kvik_replica_of_kvik_master_over_tls() {
    let pki = Pki::new();
    let (master, master_tls) = start_kvik(&pki, &[]);
    let mut m = master.client();
    // Before the replica: it arrives with the full sync; after: with the stream.
    fill(&mut m, 50);
    let args = replica_args(&pki, master_tls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let replica = TestServer::start(&args);
    let mut r = replica.client();
    wait_for_keys(&mut r, 50);
    let _: () = redis::cmd("SET")
        .arg("after")
        .arg("sync")
        .query(&mut m)
        .unwrap();
    wait_for_keys(&mut r, 51);
    let v: String = redis::cmd("GET").arg("after").query(&mut r).unwrap();
    assert_eq!(v, "sync");
    let info: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap();
    assert!(info.contains("master_link_status:up"), "{info}");
}

#[test]
fn redis_server_replica_of_kvik_master_over_tls() {
    if redis_server_or_skip().is_none() {
        return;
    }
    let pki = Pki::new();
    let (master, master_tls) = start_kvik(&pki, &[]);
    let mut m = master.client();
    fill(&mut m, 20);
    let args = replica_args(&pki, master_tls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let replica = RealRedis::start(&args);
    let mut r = replica.client();
    wait_for_keys(&mut r, 20);
    fill(&mut m, 30);
    wait_for_keys(&mut r, 30);
}

#[test]
fn kvik_replica_of_redis_server_master_over_tls() {
    if redis_server_or_skip().is_none() {
        return;
    }
    let pki = Pki::new();
    let master_tls = free_port();
    let args = pki.server_args(master_tls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let master = RealRedis::start(&args);
    let mut m = master.client();
    fill(&mut m, 20);
    let args = replica_args(&pki, master_tls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let replica = TestServer::start(&args);
    let mut r = replica.client();
    wait_for_keys(&mut r, 20);
    fill(&mut m, 30);
    wait_for_keys(&mut r, 30);
}

/// How the second session of a client that keeps its session cache started.
fn second_handshake(port: u16, config: Arc<rustls::ClientConfig>) -> rustls::HandshakeKind {
    let mut kind = None;
    for _ in 0..2 {
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(support::IO_TIMEOUT)).unwrap();
        let session = rustls::ClientConnection::new(
            config.clone(),
            ServerName::try_from("localhost").unwrap(),
        )
        .unwrap();
        let mut tls = rustls::StreamOwned::new(session, tcp);
        tls.write_all(b"PING\r\n").unwrap();
        // The reply comes after the session ticket, which the client then holds.
        assert_eq!(read_line(&mut tls), Ok("+PONG".into()));
        kind = tls.conn.handshake_kind();
    }
    kind.expect("handshake done")
}

#[test]
fn sessions_resume_unless_caching_is_off() {
    let pki = Pki::new();
    let (_server, port) = start_kvik(&pki, &[]);
    assert_eq!(
        second_handshake(port, pki.client("ca", Some("client"))),
        rustls::HandshakeKind::Resumed
    );
    let (_server, port) = start_kvik(&pki, &["--tls-session-caching", "no"]);
    assert_eq!(
        second_handshake(port, pki.client("ca", Some("client"))),
        rustls::HandshakeKind::Full
    );
}

#[test]
fn ca_certificates_from_a_directory() {
    let pki = Pki::new();
    let cas = scratch_dir("tls-ca-dir");
    std::fs::copy(pki.dir.join("ca.crt"), cas.join("trusted.pem")).unwrap();
    std::fs::write(cas.join("README"), "not a certificate\n").unwrap();
    let cas = cas.to_string_lossy().into_owned();
    let (_server, port) = start_kvik(&pki, &["--tls-ca-cert-file", "", "--tls-ca-cert-dir", &cas]);
    assert_eq!(
        tls_query(port, pki.client("ca", Some("client")), "PING"),
        Ok("+PONG".into())
    );
    assert!(tls_query(port, pki.client("ca", Some("stranger")), "PING").is_err());
}
