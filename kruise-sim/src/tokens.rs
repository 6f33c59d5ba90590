//! Service account tokens as kube-apiserver 1.36 issues and reviews them.
//!
//! `TokenRequest` (`kubectl create token`) answers a JWT signed with a key made when the
//! server starts: ES256 with a P-256 key (kube-apiserver signs with its
//! `--service-account-signing-key-file`, RS256 for the usual RSA key), `kid` in the header,
//! and kube-apiserver's claims, in its order: `aud`, `exp`, `iat`, `iss`
//! (`https://kubernetes.default.svc.cluster.local`, realk8s' `--service-account-issuer`),
//! `jti`, `kubernetes.io` (the namespace, the bound pod with its node, secret or node, and the
//! service account), `nbf` and `sub`. A bound object must exist and have the uid named.
//!
//! `TokenReview` checks the signature, the expiry, the audiences (those asked for, else the
//! issuer) and that the service account and the bound object still exist with their uids,
//! and answers as kube-apiserver does: the user with its groups and `extra` (the credential
//! id, the pod and node), the audiences both sides share, or an `error` (`invalid bearer
//! token`, `[invalid bearer token, service account token has expired]`, `... has been
//! invalidated]`, `... token audiences ["a"] is invalid for the target audiences ["b"]]`).
//!
//! A request authenticates with any token issued here until the server stops (expiry is
//! checked by reviews, not by requests).

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _,
    UnparsedPublicKey,
};
use serde_json::{Value, json};

use crate::rbac::Identity;

/// The issuer and the default audience.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The object a token is bound to, as its claims name it.
pub(crate) struct Bound {
    /// `pod`, `secret` or `node`: the claim's key.
    pub claim: &'static str,
    pub name: String,
    pub uid: String,
    /// A bound pod's node: name and uid.
    pub node: Option<(String, String)>,
}

/// What a token says.
pub(crate) struct Grant<'a> {
    pub namespace: &'a str,
    pub account: &'a str,
    pub account_uid: &'a str,
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    pub bound: Option<Bound>,
}

/// The key tokens are signed with, and the tokens issued.
pub(crate) struct Tokens {
    key: Option<EcdsaKeyPair>,
    kid: String,
    issued: Mutex<HashMap<String, Identity>>,
}

impl Default for Tokens {
    fn default() -> Self {
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .ok()
            .and_then(|pkcs8| {
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                    .ok()
            });
        let kid = key
            .as_ref()
            .map(|k| {
                URL_SAFE_NO_PAD
                    .encode(ring::digest::digest(&ring::digest::SHA256, k.public_key().as_ref()))
            })
            .unwrap_or_default();
        Tokens { key, kid, issued: Mutex::new(HashMap::new()) }
    }
}

/// Why a review refuses a token, in kube-apiserver's words.
fn refused(detail: Option<&str>) -> Value {
    let error = match detail {
        None => "invalid bearer token".to_owned(),
        Some(d) => format!("[invalid bearer token, {d}]"),
    };
    json!({"error": error, "user": {}})
}

/// A list as Go's `%q` prints a `[]string`: `["a" "b"]`.
fn go_quoted(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

impl Tokens {
    /// Signs a token for `grant`, valid from `now` (Unix seconds).
    pub(crate) fn issue(&self, grant: &Grant<'_>, now: i64) -> String {
        let mut kubernetes = serde_json::Map::new();
        kubernetes.insert("namespace".into(), json!(grant.namespace));
        if let Some(bound) = &grant.bound {
            if let Some((name, uid)) = &bound.node {
                kubernetes.insert("node".into(), json!({"name": name, "uid": uid}));
            }
            kubernetes.insert(bound.claim.into(), json!({"name": bound.name, "uid": bound.uid}));
        }
        kubernetes.insert(
            "serviceaccount".into(),
            json!({"name": grant.account, "uid": grant.account_uid}),
        );
        let claims = json!({
            "aud": grant.audiences,
            "exp": now + grant.expiration_seconds,
            "iat": now,
            "iss": ISSUER,
            "jti": crate::util::uuid(),
            "kubernetes.io": kubernetes,
            "nbf": now,
            "sub": format!("system:serviceaccount:{}:{}", grant.namespace, grant.account),
        });
        let header = json!({"alg": "ES256", "kid": self.kid});
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .key
            .as_ref()
            .and_then(|k| k.sign(&SystemRandom::new(), signed.as_bytes()).ok())
            .map(|s| URL_SAFE_NO_PAD.encode(s.as_ref()))
            .unwrap_or_default();
        let token = format!("{signed}.{signature}");
        self.issued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.clone(), Identity::service_account(grant.namespace, grant.account));
        token
    }

    /// The identity a token names, if it was issued here.
    pub(crate) fn identity(&self, token: &str) -> Option<Identity> {
        self.issued.lock().unwrap_or_else(|e| e.into_inner()).get(token).cloned()
    }

    /// The claims of a token this server signed; `None` for anything else.
    fn verified_claims(&self, token: &str) -> Option<Value> {
        let key = self.key.as_ref()?;
        let mut parts = token.split('.');
        let (Some(header), Some(claims), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key().as_ref());
        public.verify(format!("{header}.{claims}").as_bytes(), &signature).ok()?;
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).ok()?).ok()
    }

    /// The `status` of a TokenReview of `token` for `audiences` (empty: the issuer) at `now`;
    /// `exists(kind, namespace, name)` gives the uid of a service account, pod, secret or
    /// node, if it exists.
    pub(crate) fn review(
        &self,
        token: &str,
        audiences: &[String],
        now: i64,
        exists: &dyn Fn(&str, &str, &str) -> Option<String>,
    ) -> Value {
        let Some(claims) = self.verified_claims(token) else { return refused(None) };
        let wanted: Vec<String> =
            if audiences.is_empty() { vec![ISSUER.to_owned()] } else { audiences.to_vec() };
        let granted = crate::util::strings(claims.get("aud"));
        let shared: Vec<String> = wanted.iter().filter(|a| granted.contains(a)).cloned().collect();
        if shared.is_empty() {
            return refused(Some(&format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted(&granted),
                go_quoted(&wanted)
            )));
        }
        if claims["exp"].as_i64().is_none_or(|exp| now >= exp) {
            return refused(Some("service account token has expired"));
        }
        let k8s = &claims["kubernetes.io"];
        let namespace = k8s["namespace"].as_str().unwrap_or_default();
        let still = |kind: &str, ns: &str, claim: &Value| {
            let name = claim["name"].as_str().unwrap_or_default();
            exists(kind, ns, name).is_some_and(|uid| claim["uid"].as_str() == Some(uid.as_str()))
        };
        let account = &k8s["serviceaccount"];
        let mut bound_ok = still("serviceaccounts", namespace, account);
        for (claim, kind, ns) in
            [("pod", "pods", namespace), ("secret", "secrets", namespace), ("node", "nodes", "")]
        {
            if k8s.get(claim).is_some_and(|c| !c.is_null()) && !still(kind, ns, &k8s[claim]) {
                bound_ok = false;
            }
        }
        if !bound_ok {
            return refused(Some("service account token has been invalidated"));
        }
        let name = account["name"].as_str().unwrap_or_default();
        let mut extra = serde_json::Map::new();
        if let Some(jti) = claims["jti"].as_str() {
            extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                json!([format!("JTI={jti}")]),
            );
        }
        for (claim, key) in [("node", "node"), ("pod", "pod")] {
            if let Some(c) = k8s.get(claim).filter(|c| !c.is_null()) {
                extra
                    .insert(format!("authentication.kubernetes.io/{key}-name"), json!([c["name"]]));
                extra.insert(format!("authentication.kubernetes.io/{key}-uid"), json!([c["uid"]]));
            }
        }
        json!({
            "audiences": shared,
            "authenticated": true,
            "user": {
                "extra": extra,
                "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{namespace}"), "system:authenticated"],
                "uid": account["uid"],
                "username": format!("system:serviceaccount:{namespace}:{name}"),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(bound: Option<Bound>, audiences: &[&str]) -> Grant<'static> {
        Grant {
            namespace: "default",
            account: "default",
            account_uid: "sa-uid",
            audiences: audiences.iter().map(|a| (*a).to_owned()).collect(),
            expiration_seconds: 3600,
            bound,
        }
    }

    #[test]
    fn a_signed_token_reads_back_and_reviews_as_kube_apiserver_answers() {
        let tokens = Tokens::default();
        let pod = Bound { claim: "pod", name: "p".into(), uid: "pod-uid".into(), node: None };
        let token = tokens.issue(&grant(Some(pod), &["aud1"]), 1000);
        let claims = tokens.verified_claims(&token).expect("signed here");
        assert_eq!(claims["sub"], "system:serviceaccount:default:default");
        assert_eq!(claims["kubernetes.io"]["pod"]["uid"], "pod-uid");
        assert_eq!(claims["exp"], 4600);
        let uids = |kind: &str, _: &str, _: &str| match kind {
            "serviceaccounts" => Some("sa-uid".to_owned()),
            "pods" => Some("pod-uid".to_owned()),
            _ => None,
        };
        let ok = tokens.review(&token, &["aud1".into(), "other".into()], 2000, &uids);
        assert_eq!(ok["audiences"], json!(["aud1"]));
        assert_eq!(ok["user"]["extra"]["authentication.kubernetes.io/pod-name"], json!(["p"]));
        assert_eq!(
            tokens.review(&token, &[], 2000, &uids)["error"],
            r#"[invalid bearer token, token audiences ["aud1"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]]"#
        );
        assert_eq!(
            tokens.review(&token, &["aud1".into()], 5000, &uids)["error"],
            "[invalid bearer token, service account token has expired]"
        );
        let gone =
            |kind: &str, _: &str, _: &str| (kind == "serviceaccounts").then(|| "sa-uid".to_owned());
        assert_eq!(
            tokens.review(&token, &["aud1".into()], 2000, &gone)["error"],
            "[invalid bearer token, service account token has been invalidated]"
        );
        let mut forged = token.clone();
        forged.replace_range(forged.len() - 4.., "AAAA");
        assert_eq!(
            tokens.review(&forged, &["aud1".into()], 2000, &uids)["error"],
            "invalid bearer token"
        );
        assert_eq!(
            tokens.review("garbage", &[], 2000, &uids),
            json!({"error": "invalid bearer token", "user": {}})
        );
    }
}
