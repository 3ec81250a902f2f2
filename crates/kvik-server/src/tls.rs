//! TLS settings turned into rustls configurations: the server side that the
//! `tls-port` listeners hand to each connection they accept, and the client side a
//! replica's link to its master uses with `tls-replication yes`.
//!
//! It owns certificate and key loading (PEM; PKCS#8 keys encrypted with
//! `tls-key-file-pass`), the protocol and cipher-suite choices, client-certificate
//! checking and the session cache, and the current server configuration that
//! CONFIG SET swaps (new handshakes take the new one; connections already up keep
//! theirs). A leaf: it knows settings and files, nothing of sockets or event loops.

use kvik_config::Config;
use parking_lot::{Mutex, RwLock};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::server::{NoServerSessionStorage, StoresServerSessions, WebPkiClientVerifier};
use rustls::{
    CertificateError, CipherSuite, ClientConfig, DigitallySignedStruct, RootCertStore,
    ServerConfig, SignatureScheme, SupportedCipherSuite, SupportedProtocolVersion,
};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The server side of TLS as currently configured, shared by every worker thread.
#[derive(Default)]
pub struct TlsContext {
    current: RwLock<Option<Arc<ServerConfig>>>,
}

impl TlsContext {
    /// The configuration a connection accepted now handshakes with (`None` until
    /// TLS is configured).
    pub fn server_config(&self) -> Option<Arc<ServerConfig>> {
        self.current.read().clone()
    }

    /// Build the server configuration from the settings and make it the current one,
    /// when anything uses TLS (a `tls-port`, `tls-replication`), as Redis does. On an
    /// error the configuration in force stays, and the error says why. Unused, the
    /// settings are still checked as far as they can be without files: a protocol
    /// or cipher suite rustls lacks is refused at once, not when TLS is turned on.
    pub fn configure(&self, config: &Config) -> Result<(), String> {
        if !in_use(config) {
            protocol_versions(&config.tls_protocols)?;
            return provider(config).map(drop);
        }
        let built = server_config(config)?;
        // The replica's side is built at each connection to the master; built now
        // too, a file it cannot load fails here rather than at the next sync.
        if config.tls_replication {
            client_config(config)?;
        }
        *self.current.write() = Some(Arc::new(built));
        Ok(())
    }
}

/// Does anything need TLS set up (Redis configures it on these same conditions)?
fn in_use(config: &Config) -> bool {
    config.tls_port != 0 || config.tls_replication
}

/// The settings that make up the TLS configuration: changing any of them by CONFIG
/// SET builds it anew.
pub const SETTINGS: &[&str] = &[
    "tls-cert-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-auth-clients",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-replication",
];

/// The rustls configuration for TLS clients connecting to us.
fn server_config(config: &Config) -> Result<ServerConfig, String> {
    let (certs, key) = identity(config, Side::Server)?;
    let provider = provider(config)?;
    let versions = protocol_versions(&config.tls_protocols)?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols: {e}"))?;
    let builder = match config.tls_auth_clients.as_str() {
        "no" => builder.with_no_client_auth(),
        auth => {
            let roots = Arc::new(trusted_roots(config)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
            let verifier = if auth == "optional" {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| format!("tls-ca-cert-file: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut server = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls-cert-file/tls-key-file: {e}"))?;
    server.ignore_client_order = config.tls_prefer_server_ciphers;
    server.session_storage = if config.tls_session_caching {
        Arc::new(SessionCache::new(
            config.tls_session_cache_size as usize,
            Duration::from_secs(config.tls_session_cache_timeout as u64),
        ))
    } else {
        Arc::new(NoServerSessionStorage {})
    };
    Ok(server)
}

/// The rustls configuration of a replica's link to a TLS master: its certificate
/// is checked against `tls-ca-cert-file`/`tls-ca-cert-dir` (not against the host
/// name, which Redis does not check either), and we show `tls-client-cert-file`
/// (or else `tls-cert-file`) when the master asks for a client certificate.
pub fn client_config(config: &Config) -> Result<ClientConfig, String> {
    let provider = provider(config)?;
    let versions = protocol_versions(&config.tls_protocols)?;
    let roots = Arc::new(trusted_roots(config)?);
    let chain =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| format!("tls-ca-cert-file: {e}"))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(ChainOnly(chain)));
    let (certs, key) = identity(config, Side::Client)?;
    builder
        .with_client_auth_cert(certs, key)
        .map_err(|e| format!("tls-client-cert-file/tls-client-key-file: {e}"))
}

/// The name the client side presents in its handshake (SNI): the master's host
/// when it is a name, its address otherwise.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|e| format!("'{host}': {e}"))
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Server,
    Client,
}

/// The certificate chain and key one side shows: the client side uses
/// `tls-client-*` when `tls-client-cert-file` is set, the server's otherwise.
fn identity(
    config: &Config,
    side: Side,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let own_client = side == Side::Client && !config.tls_client_cert_file.is_empty();
    let (cert, key, pass, cert_name, key_name) = if own_client {
        (
            &config.tls_client_cert_file,
            &config.tls_client_key_file,
            &config.tls_client_key_file_pass,
            "tls-client-cert-file",
            "tls-client-key-file",
        )
    } else {
        (
            &config.tls_cert_file,
            &config.tls_key_file,
            &config.tls_key_file_pass,
            "tls-cert-file",
            "tls-key-file",
        )
    };
    if cert.is_empty() {
        return Err(format!("No {cert_name} configured!"));
    }
    if key.is_empty() {
        return Err(format!("No {key_name} configured!"));
    }
    let certs = certificates(cert).map_err(|e| format!("{cert_name}: {e}"))?;
    let key = private_key(key, pass).map_err(|e| format!("{key_name}: {e}"))?;
    Ok((certs, key))
}

/// Every certificate of a PEM file.
fn certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{path}: no certificate in the file"));
    }
    Ok(certs)
}

/// The private key of a PEM file; one encrypted as PKCS#8 (`ENCRYPTED PRIVATE
/// KEY`) is decrypted with `pass`.
fn private_key(path: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let text = String::from_utf8_lossy(&pem);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(format!(
            "{path}: keys encrypted in OpenSSL's traditional format are not supported; convert it to encrypted PKCS#8 (openssl pkcs8 -topk8)"
        ));
    }
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return decrypt_pkcs8(&pem, pass).map_err(|e| format!("{path}: {e}"));
    }
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| format!("{path}: {e}"))
}

fn decrypt_pkcs8(pem: &[u8], pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    if pass.is_empty() {
        return Err("the key is encrypted and no passphrase is configured".into());
    }
    let (_, der) = pkcs8::der::pem::decode_vec(pem).map_err(|e| e.to_string())?;
    let encrypted =
        pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice()).map_err(|e| e.to_string())?;
    let plain = encrypted
        .decrypt(pass)
        .map_err(|_| "cannot decrypt the key (wrong passphrase?)".to_string())?;
    Ok(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec()).into())
}

/// The CAs that client and master certificates must chain to.
fn trusted_roots(config: &Config) -> Result<RootCertStore, String> {
    if config.tls_ca_cert_file.is_empty() && config.tls_ca_cert_dir.is_empty() {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let mut roots = RootCertStore::empty();
    if !config.tls_ca_cert_file.is_empty() {
        for cert in
            certificates(&config.tls_ca_cert_file).map_err(|e| format!("tls-ca-cert-file: {e}"))?
        {
            roots
                .add(cert)
                .map_err(|e| format!("tls-ca-cert-file: {e}"))?;
        }
    }
    if !config.tls_ca_cert_dir.is_empty() {
        add_ca_dir(&mut roots, &config.tls_ca_cert_dir)
            .map_err(|e| format!("tls-ca-cert-dir: {e}"))?;
    }
    Ok(roots)
}

/// Every certificate in the files of a directory (OpenSSL's hashed links and any
/// other PEM file alike); files that hold no certificate are skipped.
fn add_ca_dir(roots: &mut RootCertStore, dir: &str) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{dir}: {e}"))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let Ok(pem) = std::fs::read(&path) else {
            continue;
        };
        for cert in CertificateDer::pem_slice_iter(&pem).flatten() {
            roots
                .add(cert)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    if roots.is_empty() {
        return Err(format!("{dir}: no certificate found"));
    }
    Ok(())
}

/// `tls-protocols`: `TLSv1.2` and/or `TLSv1.3` (both when empty). rustls has no
/// TLSv1 or TLSv1.1, which are refused by name.
fn protocol_versions(words: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    if words.trim().is_empty() {
        return Ok(rustls::ALL_VERSIONS.to_vec());
    }
    let mut versions = Vec::new();
    for word in words.split_whitespace() {
        let version = match word.to_ascii_lowercase().as_str() {
            "tlsv1.2" => &rustls::version::TLS12,
            "tlsv1.3" => &rustls::version::TLS13,
            "tlsv1" | "tlsv1.1" => {
                return Err(format!(
                    "tls-protocols: {word} is not supported (kvik's TLS library offers only TLSv1.2 and TLSv1.3)"
                ))
            }
            _ => return Err(format!("tls-protocols: unknown protocol '{word}'")),
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    Ok(versions)
}

/// The cipher suites rustls offers, by the names OpenSSL (and so Redis's
/// configurations) give them.
const SUITE_NAMES: &[(&str, CipherSuite)] = &[
    (
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// rustls's ring provider with the cipher suites `tls-ciphersuites` (TLSv1.3) and
/// `tls-ciphers` (TLSv1.2) allow, in their order; either empty allows all of its
/// version. A name rustls has no suite for is an error naming the directive.
fn provider(config: &Config) -> Result<Arc<CryptoProvider>, String> {
    let all = ring::default_provider();
    let tls13 = chosen_suites(&all, "tls-ciphersuites", &config.tls_ciphersuites, true)?;
    let tls12 = chosen_suites(&all, "tls-ciphers", &config.tls_ciphers, false)?;
    Ok(Arc::new(CryptoProvider {
        cipher_suites: tls13.into_iter().chain(tls12).collect(),
        ..all
    }))
}

fn chosen_suites(
    provider: &CryptoProvider,
    directive: &str,
    list: &str,
    tls13: bool,
) -> Result<Vec<SupportedCipherSuite>, String> {
    let of_version = |s: &SupportedCipherSuite| s.tls13().is_some() == tls13;
    if list.trim().is_empty() || list.trim().eq_ignore_ascii_case("DEFAULT") {
        return Ok(provider
            .cipher_suites
            .iter()
            .copied()
            .filter(of_version)
            .collect());
    }
    let mut chosen = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        let suite = SUITE_NAMES
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .and_then(|(_, id)| provider.cipher_suites.iter().find(|s| s.suite() == *id))
            .filter(|s| of_version(s));
        match suite {
            Some(s) => chosen.push(*s),
            None => {
                let offered: Vec<&str> = SUITE_NAMES
                    .iter()
                    .filter(|(_, id)| id_is_tls13(*id) == tls13)
                    .map(|(n, _)| *n)
                    .collect();
                return Err(format!(
                    "{directive}: '{name}' is not a cipher suite kvik's TLS library supports (supported: {})",
                    offered.join(":")
                ));
            }
        }
    }
    Ok(chosen)
}

fn id_is_tls13(id: CipherSuite) -> bool {
    matches!(
        id,
        CipherSuite::TLS13_AES_128_GCM_SHA256
            | CipherSuite::TLS13_AES_256_GCM_SHA384
            | CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
    )
}

/// Checks a master's certificate chain and signature but not the name it is for:
/// replicas reach masters by address as often as by name, and Redis checks the
/// chain only.
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The server's session cache for resumption: at most `tls-session-cache-size`
/// sessions (0: no limit, as OpenSSL's), each forgotten after
/// `tls-session-cache-timeout`; the oldest goes first when it is full.
#[derive(Debug)]
struct SessionCache {
    capacity: usize,
    timeout: Duration,
    sessions: Mutex<Sessions>,
}

#[derive(Debug, Default)]
struct Sessions {
    by_id: HashMap<Vec<u8>, (Instant, Vec<u8>)>,
    /// Ids in the order they were stored (an id taken meanwhile may linger here).
    order: VecDeque<Vec<u8>>,
}

impl SessionCache {
    fn new(capacity: usize, timeout: Duration) -> Self {
        SessionCache {
            capacity,
            timeout,
            sessions: Mutex::default(),
        }
    }

    fn fresh(&self, stored: Instant) -> bool {
        stored.elapsed() < self.timeout
    }
}

impl StoresServerSessions for SessionCache {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut s = self.sessions.lock();
        while self.capacity > 0 && s.by_id.len() >= self.capacity {
            let Some(oldest) = s.order.pop_front() else {
                break;
            };
            s.by_id.remove(&oldest);
        }
        // Ids no longer stored would make `order` grow without bound.
        if s.order.len() > 2 * s.by_id.len() + 64 {
            let Sessions { by_id, order } = &mut *s;
            order.retain(|id| by_id.contains_key(id));
        }
        s.order.push_back(key.clone());
        s.by_id.insert(key, (Instant::now(), value));
        true
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let s = self.sessions.lock();
        let (stored, value) = s.by_id.get(key)?;
        self.fresh(*stored).then(|| value.clone())
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let (stored, value) = self.sessions.lock().by_id.remove(key)?;
        self.fresh(stored).then_some(value)
    }

    fn can_cache(&self) -> bool {
        !self.timeout.is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_by_name() {
        assert_eq!(protocol_versions("").unwrap().len(), 2);
        let only13 = protocol_versions("TLSv1.3").unwrap();
        assert_eq!(only13, vec![&rustls::version::TLS13]);
        assert!(protocol_versions("TLSv1 TLSv1.2")
            .unwrap_err()
            .contains("TLSv1 is not supported"));
        assert!(protocol_versions("SSLv3")
            .unwrap_err()
            .contains("unknown protocol 'SSLv3'"));
    }

    #[test]
    fn cipher_suites_by_openssl_name_in_order() {
        let all = ring::default_provider();
        let chosen = chosen_suites(
            &all,
            "tls-ciphers",
            "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256",
            false,
        )
        .unwrap();
        let ids: Vec<CipherSuite> = chosen.iter().map(|s| s.suite()).collect();
        assert_eq!(
            ids,
            vec![
                CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
                CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            ]
        );
        // A TLSv1.3 suite is not a TLSv1.2 cipher.
        let err = chosen_suites(&all, "tls-ciphers", "TLS_AES_128_GCM_SHA256", false).unwrap_err();
        assert!(
            err.starts_with("tls-ciphers: 'TLS_AES_128_GCM_SHA256'"),
            "{err}"
        );
    }

    #[test]
    fn session_cache_keeps_the_newest_within_its_age() {
        let cache = SessionCache::new(2, Duration::from_secs(60));
        for id in [b"a", b"b", b"c"] {
            assert!(cache.put(id.to_vec(), id.to_vec()));
        }
        assert_eq!(cache.get(b"a"), None, "the oldest made room");
        assert_eq!(cache.get(b"c"), Some(b"c".to_vec()));
        assert_eq!(cache.take(b"b"), Some(b"b".to_vec()));
        assert_eq!(cache.get(b"b"), None);
        let expired = SessionCache::new(0, Duration::ZERO);
        expired.put(b"x".to_vec(), b"x".to_vec());
        assert_eq!(expired.get(b"x"), None);
        assert!(!expired.can_cache());
    }
}
