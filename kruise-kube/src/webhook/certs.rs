//! The webhook's certificates: a self-signed CA and a serving certificate it signs, kept in a
//! Secret that every replica shares, or external files in a directory.
//!
//! The Secret uses upstream's keys (`ca-cert.pem`, `ca-key.pem`, `cert.pem`, `key.pem`, plus
//! `tls.crt`/`tls.key` copies). Certificates are reissued when they are missing, unparsable,
//! not signed by the CA, do not cover every name the webhook is reached by, or expire within
//! [`WebhookConfig::rotate_before`]. The CA is kept while it outlives a new serving
//! certificate, so the `caBundle` clients trust stays the same across serving rotations.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};
use rustls::client::danger::ServerCertVerifier;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use super::{WebhookConfig, WebhookError};

/// Secret key of the CA certificate (PEM).
pub const CA_CERT_KEY: &str = "ca-cert.pem";
/// Secret key of the CA private key (PEM).
pub const CA_KEY_KEY: &str = "ca-key.pem";
/// Secret key of the serving certificate (PEM).
pub const CERT_KEY: &str = "cert.pem";
/// Secret key of the serving private key (PEM).
pub const KEY_KEY: &str = "key.pem";
/// Secret key holding a copy of the serving certificate, and its file name in a cert dir.
pub const TLS_CRT: &str = "tls.crt";
/// Secret key holding a copy of the serving key, and its file name in a cert dir.
pub const TLS_KEY: &str = "tls.key";
/// File name of the CA certificate in a cert dir.
pub const CA_CRT: &str = "ca.crt";

/// Common name of the self-signed CA (upstream's).
const CA_COMMON_NAME: &str = "webhook-cert-ca";
/// How far back `notBefore` is set, so peers with a slightly late clock accept new certificates.
const BACKDATE: Duration = Duration::from_secs(60 * 60);
/// Longest validity issued (keeps date arithmetic far from overflow).
const MAX_VALIDITY: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);
/// How many times a conflicting write to the Secret is retried.
const SECRET_ATTEMPTS: usize = 5;

/// A CA and the serving certificate and key it signed, all PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct CertBundle {
    /// The CA certificate: what clients trust (the `caBundle`).
    pub ca_cert_pem: String,
    /// The CA key; `None` for external certificates.
    pub ca_key_pem: Option<String>,
    /// The serving certificate (chain), leaf first.
    pub cert_pem: String,
    /// The serving key.
    pub key_pem: String,
}

impl std::fmt::Debug for CertBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertBundle")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("ca_key_pem", &self.ca_key_pem.as_ref().map(|_| "<redacted>"))
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// What identifies a certificate: its serial number and validity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertInfo {
    /// The serial number, lowercase hex without leading zero bytes.
    pub serial: String,
    /// Start of validity.
    pub not_before: jiff::Timestamp,
    /// End of validity.
    pub not_after: jiff::Timestamp,
}

impl CertInfo {
    /// Reads the first certificate of a PEM document.
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        let der = first_cert(pem)?;
        parse_cert_info(der.as_ref()).ok_or_else(|| "the certificate is not valid DER".to_owned())
    }
}

/// The validity periods of newly issued certificates and when they are renewed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lifetimes {
    pub cert_validity: Duration,
    pub ca_validity: Duration,
    pub rotate_before: Duration,
}

impl Lifetimes {
    pub(crate) fn of(config: &WebhookConfig) -> Self {
        Self {
            cert_validity: config.cert_validity.min(MAX_VALIDITY),
            ca_validity: config.ca_validity.min(MAX_VALIDITY),
            rotate_before: config.rotate_before.min(MAX_VALIDITY),
        }
    }
}

impl CertBundle {
    /// Issues a serving certificate for `names` (DNS names or IP addresses) signed by `ca`
    /// (certificate and key PEM) when given, else by a new CA.
    pub(crate) fn issue(
        names: &[String],
        ca: Option<(&str, &str)>,
        lifetimes: Lifetimes,
        now: SystemTime,
    ) -> Result<Self, WebhookError> {
        let (ca_params, ca_key, ca_cert_pem) = match ca {
            Some((cert, key)) => {
                let key = rcgen::KeyPair::from_pem(key).map_err(WebhookError::Generate)?;
                (ca_params(now, lifetimes.ca_validity), key, cert.to_owned())
            }
            None => {
                let key = rcgen::KeyPair::generate().map_err(WebhookError::Generate)?;
                let params = ca_params(now, lifetimes.ca_validity);
                let cert = params.self_signed(&key).map_err(WebhookError::Generate)?;
                (params, key, cert.pem())
            }
        };
        let ca_key_pem = ca_key.serialize_pem();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = rcgen::KeyPair::generate().map_err(WebhookError::Generate)?;
        let mut params =
            rcgen::CertificateParams::new(names.to_vec()).map_err(WebhookError::Generate)?;
        let mut dn = rcgen::DistinguishedName::new();
        if let Some(cn) = names.first() {
            dn.push(rcgen::DnType::CommonName, cn.as_str());
        }
        params.distinguished_name = dn;
        params.is_ca = rcgen::IsCa::ExplicitNoCa;
        params.key_usages =
            vec![rcgen::KeyUsagePurpose::DigitalSignature, rcgen::KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(random_serial());
        set_validity(&mut params, now, lifetimes.cert_validity);
        let cert = params.signed_by(&key, &issuer).map_err(WebhookError::Generate)?;
        Ok(Self {
            ca_cert_pem,
            ca_key_pem: Some(ca_key_pem),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Issues a new serving certificate, keeping this bundle's CA when it is usable (its key
    /// loads, it signs what it issues, and it outlives the new certificate); otherwise a new CA.
    pub(crate) fn reissue(
        &self,
        names: &[String],
        lifetimes: Lifetimes,
        now: SystemTime,
    ) -> Result<Self, WebhookError> {
        if let Some(ca_key) = &self.ca_key_pem {
            let outlives = CertInfo::from_pem(&self.ca_cert_pem)
                .is_ok_and(|ca| ca.not_after >= timestamp(now + lifetimes.cert_validity));
            if outlives
                && let Ok(next) =
                    Self::issue(names, Some((&self.ca_cert_pem, ca_key)), lifetimes, now)
                && next.check(names, now, Duration::ZERO).is_ok()
            {
                return Ok(next);
            }
        }
        Self::issue(names, None, lifetimes, now)
    }

    /// Checks that the key matches the certificate, that the CA signed it, and that it is valid
    /// for every one of `names` from `now` until `now + rotate_before` (the CA too). The error
    /// says what is wrong.
    pub fn check(
        &self,
        names: &[String],
        now: SystemTime,
        rotate_before: Duration,
    ) -> Result<(), String> {
        self.certified_key()?;
        let chain = certs(&self.cert_pem)?;
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Err("no serving certificate".to_owned());
        };
        let ca =
            CertInfo::from_pem(&self.ca_cert_pem).map_err(|e| format!("CA certificate: {e}"))?;
        let until = now + rotate_before;
        if ca.not_after < timestamp(until) {
            return Err(format!("the CA certificate expires at {}", ca.not_after));
        }
        let mut roots = rustls::RootCertStore::empty();
        for ca in certs(&self.ca_cert_pem)? {
            roots.add(ca).map_err(|e| format!("CA certificate: {e}"))?;
        }
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .build()
        .map_err(|e| format!("CA certificate: {e}"))?;
        for name in names {
            let server_name = ServerName::try_from(name.as_str())
                .map_err(|e| format!("{name:?} is not a DNS name or IP address: {e}"))?;
            for at in [now, until] {
                verifier
                    .verify_server_cert(leaf, intermediates, &server_name, &[], unix_time(at))
                    .map_err(|e| {
                        format!("serving certificate for {name:?} at {}: {e}", timestamp(at))
                    })?;
            }
        }
        Ok(())
    }

    /// The serving certificate and key, loaded for rustls.
    pub(crate) fn certified_key(&self) -> Result<Arc<CertifiedKey>, String> {
        let chain = certs(&self.cert_pem)?;
        if chain.is_empty() {
            return Err("no serving certificate".to_owned());
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| format!("serving key: {e}"))?;
        let certified = CertifiedKey::from_der(chain, key, &provider())
            .map_err(|e| format!("serving key and certificate: {e}"))?;
        Ok(Arc::new(certified))
    }

    /// The serving certificate's serial and validity.
    pub fn serving_info(&self) -> Result<CertInfo, String> {
        CertInfo::from_pem(&self.cert_pem)
    }

    fn from_secret(secret: &Secret) -> Option<Self> {
        let data = secret.data.as_ref()?;
        let text = |key: &str| {
            data.get(key)
                .and_then(|v| String::from_utf8(v.0.clone()).ok())
                .filter(|s| !s.is_empty())
        };
        Some(Self {
            ca_cert_pem: text(CA_CERT_KEY)?,
            ca_key_pem: Some(text(CA_KEY_KEY)?),
            cert_pem: text(CERT_KEY).or_else(|| text(TLS_CRT))?,
            key_pem: text(KEY_KEY).or_else(|| text(TLS_KEY))?,
        })
    }

    fn secret_data(&self) -> BTreeMap<String, ByteString> {
        let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
        let mut data = BTreeMap::new();
        data.insert(CA_CERT_KEY.to_owned(), bytes(&self.ca_cert_pem));
        if let Some(ca_key) = &self.ca_key_pem {
            data.insert(CA_KEY_KEY.to_owned(), bytes(ca_key));
        }
        data.insert(CERT_KEY.to_owned(), bytes(&self.cert_pem));
        data.insert(TLS_CRT.to_owned(), bytes(&self.cert_pem));
        data.insert(KEY_KEY.to_owned(), bytes(&self.key_pem));
        data.insert(TLS_KEY.to_owned(), bytes(&self.key_pem));
        data
    }
}

/// Reads the webhook's certificates from the Secret, or issues them and writes the Secret
/// when they are missing or not [`CertBundle::check`]-valid. Another replica's concurrent
/// write wins: on a conflict the Secret is read again and its certificates used.
pub(crate) async fn ensure_secret(
    client: &kube::Client,
    config: &WebhookConfig,
    names: &[String],
    now: SystemTime,
) -> Result<CertBundle, WebhookError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    let lifetimes = Lifetimes::of(config);
    let secret_error = |source| WebhookError::Secret {
        namespace: config.namespace.clone(),
        name: config.secret_name.clone(),
        source,
    };
    for _ in 0..SECRET_ATTEMPTS {
        let existing = api.get_opt(&config.secret_name).await.map_err(secret_error)?;
        let Some(mut secret) = existing else {
            let bundle = CertBundle::issue(names, None, lifetimes, now)?;
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(config.secret_name.clone()),
                    namespace: Some(config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                data: Some(bundle.secret_data()),
                ..Secret::default()
            };
            match api.create(&PostParams::default(), &secret).await {
                Ok(_) => {
                    tracing::info!(secret = %config.secret_name, namespace = %config.namespace,
                        "created webhook certificates");
                    return Ok(bundle);
                }
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    return Err(WebhookError::NamespaceMissing {
                        namespace: config.namespace.clone(),
                        secret: config.secret_name.clone(),
                    });
                }
                Err(e) => return Err(secret_error(e)),
            }
        };
        let current = CertBundle::from_secret(&secret);
        let reason = match &current {
            Some(bundle) => match bundle.check(names, now, lifetimes.rotate_before) {
                Ok(()) => return Ok(bundle.clone()),
                Err(reason) => reason,
            },
            None => "the Secret lacks a certificate or key".to_owned(),
        };
        let bundle = match &current {
            Some(bundle) => bundle.reissue(names, lifetimes, now)?,
            None => CertBundle::issue(names, None, lifetimes, now)?,
        };
        tracing::info!(secret = %config.secret_name, namespace = %config.namespace, %reason,
            "renewing webhook certificates");
        let mut data = secret.data.take().unwrap_or_default();
        data.extend(bundle.secret_data());
        secret.data = Some(data);
        secret.string_data = None;
        secret.metadata.managed_fields = None;
        match api.replace(&config.secret_name, &PostParams::default(), &secret).await {
            Ok(_) => return Ok(bundle),
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => continue,
            Err(e) => return Err(secret_error(e)),
        }
    }
    Err(WebhookError::SecretConflict {
        namespace: config.namespace.clone(),
        name: config.secret_name.clone(),
    })
}

/// Reads certificates another writer keeps in the Secret (`EnableExternalCerts`): `ca.crt`,
/// `tls.crt` and `tls.key` as cert-manager writes them (or the names this manager writes).
/// The Secret is never written.
pub(crate) async fn read_secret(
    client: &kube::Client,
    config: &WebhookConfig,
) -> Result<CertBundle, WebhookError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    let origin = format!("Secret {}/{}", config.namespace, config.secret_name);
    let secret = api
        .get_opt(&config.secret_name)
        .await
        .map_err(|source| WebhookError::Secret {
            namespace: config.namespace.clone(),
            name: config.secret_name.clone(),
            source,
        })?
        .ok_or_else(|| WebhookError::ExternalSecretMissing {
            namespace: config.namespace.clone(),
            name: config.secret_name.clone(),
        })?;
    let data = secret.data.unwrap_or_default();
    let text = |keys: [&str; 2]| {
        keys.iter().find_map(|key| {
            data.get(*key)
                .and_then(|v| String::from_utf8(v.0.clone()).ok())
                .filter(|s| !s.is_empty())
        })
    };
    let invalid = |reason: String| WebhookError::InvalidCerts { origin: origin.clone(), reason };
    let missing = |key: &str| invalid(format!("the Secret has no {key}"));
    let bundle = CertBundle {
        ca_cert_pem: text([CA_CRT, CA_CERT_KEY]).ok_or_else(|| missing(CA_CRT))?,
        ca_key_pem: None,
        cert_pem: text([TLS_CRT, CERT_KEY]).ok_or_else(|| missing(TLS_CRT))?,
        key_pem: text([TLS_KEY, KEY_KEY]).ok_or_else(|| missing(TLS_KEY))?,
    };
    bundle.certified_key().map_err(invalid)?;
    CertInfo::from_pem(&bundle.ca_cert_pem).map_err(|e| invalid(format!("{CA_CRT}: {e}")))?;
    Ok(bundle)
}

/// Reads external certificates from `dir`: `tls.crt`, `tls.key` and `ca.crt`.
pub(crate) fn read_dir(dir: &Path) -> Result<CertBundle, WebhookError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|source| WebhookError::CertFile { path, source })
    };
    let bundle = CertBundle {
        ca_cert_pem: read(CA_CRT)?,
        ca_key_pem: None,
        cert_pem: read(TLS_CRT)?,
        key_pem: read(TLS_KEY)?,
    };
    let invalid =
        |reason: String| WebhookError::InvalidCerts { origin: dir.display().to_string(), reason };
    bundle.certified_key().map_err(invalid)?;
    CertInfo::from_pem(&bundle.ca_cert_pem).map_err(|e| invalid(format!("{CA_CRT}: {e}")))?;
    Ok(bundle)
}

/// The rustls crypto provider (ring) used by the server and its checks.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate of a PEM document.
pub(crate) fn certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("invalid PEM certificate: {e}"))
}

fn first_cert(pem: &str) -> Result<CertificateDer<'static>, String> {
    certs(pem)?.into_iter().next().ok_or_else(|| "no certificate in PEM".to_owned())
}

fn ca_params(now: SystemTime, validity: Duration) -> rcgen::CertificateParams {
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, CA_COMMON_NAME);
    params.distinguished_name = dn;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    params.serial_number = Some(random_serial());
    set_validity(&mut params, now, validity);
    params
}

fn random_serial() -> rcgen::SerialNumber {
    let mut bytes: [u8; 16] = rand::random();
    // A positive INTEGER with no leading zero byte.
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    rcgen::SerialNumber::from_slice(&bytes)
}

/// Sets `params`' validity to `[now - BACKDATE, now + validity]`, to the second.
fn set_validity(params: &mut rcgen::CertificateParams, now: SystemTime, validity: Duration) {
    let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + Duration::from_secs(secs(now.checked_sub(BACKDATE).unwrap_or(now)));
    params.not_after = epoch + Duration::from_secs(secs(now + validity));
}

fn unix_time(t: SystemTime) -> UnixTime {
    UnixTime::since_unix_epoch(t.duration_since(UNIX_EPOCH).unwrap_or_default())
}

/// `t` as a timestamp (saturating at jiff's range).
pub(crate) fn timestamp(t: SystemTime) -> jiff::Timestamp {
    jiff::Timestamp::try_from(t).unwrap_or(jiff::Timestamp::MAX)
}

/// One DER TLV: tag, content, rest.
fn der_tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// Reads the serial and validity of a DER certificate.
fn parse_cert_info(der: &[u8]) -> Option<CertInfo> {
    const SEQUENCE: u8 = 0x30;
    const INTEGER: u8 = 0x02;
    const VERSION: u8 = 0xa0;
    let (SEQUENCE, cert, _) = der_tlv(der)? else { return None };
    let (SEQUENCE, tbs, _) = der_tlv(cert)? else { return None };
    let (mut tag, mut serial, mut rest) = der_tlv(tbs)?;
    if tag == VERSION {
        (tag, serial, rest) = der_tlv(rest)?;
    }
    if tag != INTEGER {
        return None;
    }
    let (SEQUENCE, _signature, rest) = der_tlv(rest)? else { return None };
    let (SEQUENCE, _issuer, rest) = der_tlv(rest)? else { return None };
    let (SEQUENCE, validity, _) = der_tlv(rest)? else { return None };
    let (t1, not_before, rest) = der_tlv(validity)?;
    let (t2, not_after, _) = der_tlv(rest)?;
    let trimmed = match serial.iter().position(|&b| b != 0) {
        Some(i) => &serial[i..],
        None => &serial[serial.len().saturating_sub(1)..],
    };
    Some(CertInfo {
        serial: trimmed.iter().map(|b| format!("{b:02x}")).collect(),
        not_before: der_time(t1, not_before)?,
        not_after: der_time(t2, not_after)?,
    })
}

/// A DER UTCTime (`YYMMDDHHMMSSZ`) or GeneralizedTime (`YYYYMMDDHHMMSSZ`).
fn der_time(tag: u8, bytes: &[u8]) -> Option<jiff::Timestamp> {
    const UTC_TIME: u8 = 0x17;
    const GENERALIZED_TIME: u8 = 0x18;
    let text = std::str::from_utf8(bytes).ok()?.strip_suffix('Z')?;
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let full = match (tag, text.len()) {
        (UTC_TIME, 12) => {
            let yy: u32 = text[..2].parse().ok()?;
            let century = if yy >= 50 { "19" } else { "20" };
            format!("{century}{text}")
        }
        (GENERALIZED_TIME, 14) => text.to_owned(),
        _ => return None,
    };
    let iso = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &full[..4],
        &full[4..6],
        &full[6..8],
        &full[8..10],
        &full[10..12],
        &full[12..14]
    );
    iso.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lifetimes() -> Lifetimes {
        Lifetimes {
            cert_validity: Duration::from_secs(365 * 24 * 3600),
            ca_validity: Duration::from_secs(10 * 365 * 24 * 3600),
            rotate_before: Duration::from_secs(30 * 24 * 3600),
        }
    }

    fn names() -> Vec<String> {
        vec!["svc.ns.svc".to_owned(), "127.0.0.1".to_owned()]
    }

    #[test]
    fn issued_certificates_check_and_carry_their_validity() {
        let now = SystemTime::now();
        let bundle = CertBundle::issue(&names(), None, lifetimes(), now).expect("issued");
        bundle.check(&names(), now, lifetimes().rotate_before).expect("valid");
        let info = bundle.serving_info().expect("serving info");
        let want = timestamp(now + lifetimes().cert_validity);
        assert!((info.not_after - want).get_seconds().abs() <= 1, "{info:?}");
        assert!(info.not_before < timestamp(now));
        let ca = CertInfo::from_pem(&bundle.ca_cert_pem).expect("CA info");
        assert!(ca.not_after > info.not_after);
        assert_ne!(ca.serial, info.serial);
    }

    #[test]
    fn check_names_the_problem() {
        let now = SystemTime::now();
        let bundle = CertBundle::issue(&names(), None, lifetimes(), now).expect("issued");
        let other = vec!["other.ns.svc".to_owned()];
        let err = bundle.check(&other, now, Duration::ZERO).expect_err("invalid");
        assert!(err.contains("other.ns.svc"), "{err}");
        let err =
            bundle.check(&names(), now, Duration::from_secs(400 * 24 * 3600)).expect_err("invalid");
        assert!(err.contains("svc.ns.svc"), "{err}");
        let mut swapped = bundle.clone();
        swapped.key_pem =
            CertBundle::issue(&names(), None, lifetimes(), now).expect("issued").key_pem;
        assert!(swapped.check(&names(), now, Duration::ZERO).is_err());
        let foreign = CertBundle::issue(&names(), None, lifetimes(), now).expect("issued");
        let mut mixed = bundle.clone();
        mixed.ca_cert_pem = foreign.ca_cert_pem;
        assert!(mixed.check(&names(), now, Duration::ZERO).is_err());
    }

    #[test]
    fn reissue_keeps_a_usable_ca_and_replaces_an_expiring_one() {
        let now = SystemTime::now();
        let bundle = CertBundle::issue(&names(), None, lifetimes(), now).expect("issued");
        let next = bundle.reissue(&names(), lifetimes(), now).expect("reissued");
        assert_eq!(next.ca_cert_pem, bundle.ca_cert_pem);
        assert_ne!(next.cert_pem, bundle.cert_pem);
        next.check(&names(), now, lifetimes().rotate_before).expect("valid");

        let short = Lifetimes { ca_validity: Duration::from_secs(3600), ..lifetimes() };
        let bundle = CertBundle::issue(&names(), None, short, now).expect("issued");
        let next = bundle.reissue(&names(), short, now).expect("reissued");
        assert_ne!(next.ca_cert_pem, bundle.ca_cert_pem);
    }

    #[test]
    fn der_times_parse_both_encodings() {
        assert_eq!(
            der_time(0x17, b"491231235959Z").expect("a time").to_string(),
            "2049-12-31T23:59:59Z"
        );
        assert_eq!(
            der_time(0x17, b"500101000000Z").expect("a time").to_string(),
            "1950-01-01T00:00:00Z"
        );
        assert_eq!(
            der_time(0x18, b"20510101000000Z").expect("a time").to_string(),
            "2051-01-01T00:00:00Z"
        );
        assert!(der_time(0x18, b"2051010100000Z").is_none());
        assert!(der_time(0x17, b"49123123595aZ").is_none());
        assert!(parse_cert_info(b"\x30\x03\x02\x01\x01").is_none());
    }
}
