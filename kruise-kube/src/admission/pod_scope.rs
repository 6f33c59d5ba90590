//! The writer of the generated pod webhook entries (`--pod-webhook-scope=selected`).
//!
//! Every registered [`PodFeature`] says which pods its objects select
//! ([`PodFeature::scope`]); kruise-core's [`pod_scope`] turns that into webhook entries, one per
//! group of equal selectors, each sending only those pods to `/mutate-pod` with
//! `failurePolicy: Fail`, spread over the `kruise-pod-webhooks-<n>` configurations. This task,
//! run by the leader only, writes them through the [`Applier`] whenever a feature's objects
//! change (debounced), the webhook's trust bundle rotates, or leadership is gained, and checks
//! them against the server every [`RESYNC`] in case someone else changed them.
//!
//! A pod no feature selects never reaches the webhook; a pod one selects is refused while the
//! manager cannot answer, rather than created without its sidecar, subset or budget label.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};
use kruise_core::admission::pod_scope::{
    self, CanonicalSelector, GENERATED_LABEL, GENERATED_LABEL_VALUE, ScopePolicy,
    StoredConfiguration,
};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use super::{PodFeature, WebhookPolicy};
use crate::applier::{Applier, ApplyError, PlanOwner};
use crate::leader::LeaderHandle;

/// The least time between two writes of the entries: changes within it are gathered.
pub const DEBOUNCE: Duration = Duration::from_millis(200);
/// How often the stored configurations are compared with the wanted ones even when nothing
/// changed here.
pub const RESYNC: Duration = Duration::from_secs(300);
/// The path every generated entry calls.
pub const PATH: &str = "/mutate-pod";

/// What the writer needs; see the module documentation.
pub struct PodScopeWriter {
    /// The features whose objects decide the entries.
    pub features: Vec<Arc<dyn PodFeature>>,
    /// The manager's namespace, the narrowing selectors and the timeout.
    pub policy: WebhookPolicy,
    /// Writes, leader-gated.
    pub applier: Applier,
    /// The `clientConfig` of `/mutate-pod`, current (it changes as the trust bundle rotates).
    pub client_config: watch::Receiver<Value>,
    /// Set once the entries have been written, so that the catch-all `mpod.kb.io` can go.
    pub generated: watch::Sender<bool>,
}

/// Why one round of writes failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PodScopeError {
    /// The server refused a read or a write.
    #[error("{action}: {source}")]
    Write {
        /// What was being done.
        action: String,
        /// The server's answer.
        #[source]
        source: ApplyError,
    },
    /// The configurations kept changing under the writer.
    #[error("the generated pod webhook configurations did not settle after {0} rounds")]
    Unsettled(usize),
}

impl PodScopeWriter {
    /// The entry every generated webhook starts from.
    fn template(&self, client_config: &Value) -> Value {
        json!({
            "admissionReviewVersions": ["v1", "v1beta1"],
            "clientConfig": client_config,
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "reinvocationPolicy": "Never",
            "rules": [{
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["pods"],
                "scope": "*"
            }],
            "sideEffects": "None",
            "timeoutSeconds": self.policy.timeout_seconds
        })
    }

    fn scope_policy(&self) -> ScopePolicy {
        let canonical = |s: &Option<
            k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
        >| { s.as_ref().and_then(CanonicalSelector::new) };
        ScopePolicy {
            manager_namespace: self.policy.manager_namespace.clone(),
            namespaces: canonical(&self.policy.pod_namespace_selector),
            pods: canonical(&self.policy.pod_object_selector),
        }
    }

    /// The webhooks of each generated configuration, as the server will answer them.
    pub fn desired(&self, client_config: &Value) -> Vec<Vec<Value>> {
        let terms = self.features.iter().flat_map(|f| f.scope());
        let entries = pod_scope::scoped_entries(terms, &self.scope_policy());
        let template = self.template(client_config);
        let (target, max) =
            (pod_scope::TARGET_ENTRIES_PER_CONFIGURATION, pod_scope::MAX_ENTRIES_PER_CONFIGURATION);
        pod_scope::partition(entries, target, max)
            .iter()
            .map(|config| config.iter().map(|e| normalised(e.to_webhook(&template))).collect())
            .collect()
    }

    async fn stored(&self) -> Result<Vec<StoredConfiguration>, PodScopeError> {
        let all =
            self.applier.list::<MutatingWebhookConfiguration>("").await.map_err(|source| {
                PodScopeError::Write { action: "listing webhook configurations".into(), source }
            })?;
        Ok(all
            .into_iter()
            .filter(|c| {
                c.metadata.labels.as_ref().and_then(|l| l.get(GENERATED_LABEL)).map(String::as_str)
                    == Some(GENERATED_LABEL_VALUE)
            })
            .map(|c| StoredConfiguration {
                name: c.metadata.name.unwrap_or_default(),
                webhooks: c
                    .webhooks
                    .unwrap_or_default()
                    .iter()
                    .map(|w| serde_json::to_value(w).unwrap_or(Value::Null))
                    .collect(),
            })
            .collect())
    }

    /// Brings the stored configurations to `desired`, a step at a time (adding before
    /// removing); the number of writes. `known` is what is stored, as this writer last read
    /// or wrote it (`None`: read it from the server); it is kept current, and cleared when a
    /// write fails.
    ///
    /// # Errors
    /// The first refused read or write, or configurations that do not settle.
    pub async fn write(
        &self,
        desired: &[Vec<Value>],
        known: &mut Option<Vec<StoredConfiguration>>,
    ) -> Result<usize, PodScopeError> {
        const ROUNDS: usize = 4;
        let mut writes = 0;
        for _ in 0..ROUNDS {
            let mut stored = match known.take() {
                Some(stored) => stored,
                None => self.stored().await?,
            };
            let actions = pod_scope::configuration_writes(&stored, desired);
            tracing::debug!(actions = actions.len(), "pod webhook writes planned");
            if actions.is_empty() {
                *known = Some(stored);
                return Ok(writes);
            }
            for action in &actions {
                let owner = owner(action.target());
                self.applier.send(&owner, action).await.map_err(|source| PodScopeError::Write {
                    action: format!("writing {}", action.target()),
                    source,
                })?;
                pod_scope::apply_writes(&mut stored, std::slice::from_ref(action));
                writes += 1;
            }
            *known = Some(stored);
        }
        Err(PodScopeError::Unsettled(ROUNDS))
    }

    /// Runs until `stop`: waits for leadership and for every feature's cache, writes, then
    /// writes again after each change.
    pub async fn run(
        mut self,
        leader: LeaderHandle,
        stop: impl std::future::Future<Output = ()> + Send,
    ) {
        let wake = Arc::new(Notify::new());
        for feature in &self.features {
            feature.watch_scope(wake.clone());
        }
        let mut leading = leader.subscribe();
        tokio::pin!(stop);
        let mut settled: Option<Vec<Vec<Value>>> = None;
        // What is stored, as last read or written here: read again after a failed write, on
        // gaining leadership and every RESYNC.
        let mut known: Option<Vec<StoredConfiguration>> = None;
        let mut backoff = Duration::from_millis(500);
        loop {
            tokio::select! {
                _ = leading.wait_for(|l| *l) => {}
                _ = &mut stop => return,
            }
            let synced = async {
                for feature in &self.features {
                    feature.wait_synced().await;
                }
            };
            tokio::select! {
                _ = synced => {}
                _ = &mut stop => return,
            }
            let client_config = self.client_config.borrow_and_update().clone();
            let desired = self.desired(&client_config);
            tracing::debug!(configurations = desired.len(), "pod webhook entries computed");
            if settled.as_ref() != Some(&desired) {
                match self.write(&desired, &mut known).await {
                    Ok(writes) => {
                        if writes > 0 {
                            let entries: usize = desired.iter().map(Vec::len).sum();
                            tracing::info!(
                                entries,
                                configurations = desired.len(),
                                writes,
                                "pod webhook entries written"
                            );
                        }
                        settled = Some(desired);
                        backoff = Duration::from_millis(500);
                        // Once: the static configuration is then written again without the
                        // catch-all.
                        self.generated
                            .send_if_modified(|generated| !std::mem::replace(generated, true));
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "writing the pod webhook entries");
                        tokio::select! {
                            () = tokio::time::sleep(backoff) => {}
                            _ = &mut stop => return,
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(30));
                        continue;
                    }
                }
            }
            // The first change after a quiet spell is written at once; those that follow
            // within DEBOUNCE are gathered into the next write.
            tokio::select! {
                () = tokio::time::sleep(DEBOUNCE) => {}
                _ = &mut stop => return,
            }
            tokio::select! {
                () = wake.notified() => {}
                _ = self.client_config.changed() => {}
                _ = leading.changed() => (settled, known) = (None, None),
                () = tokio::time::sleep(RESYNC) => (settled, known) = (None, None),
                _ = &mut stop => return,
            }
        }
    }
}

/// `webhook` as the server answers it (the typed form drops what it does not keep), so that
/// what is stored and what is wanted compare alike.
fn normalised(webhook: Value) -> Value {
    match serde_json::from_value::<MutatingWebhook>(webhook.clone()) {
        Ok(typed) => serde_json::to_value(typed).unwrap_or(webhook),
        Err(_) => webhook,
    }
}

/// The configuration an action writes, as the owner its failures are reported against.
fn owner(name: &str) -> PlanOwner {
    let config = MutatingWebhookConfiguration {
        metadata: kube::api::ObjectMeta { name: Some(name.to_owned()), ..Default::default() },
        webhooks: None,
    };
    PlanOwner::of(&config, Value::Null)
}

/// What [`generated_exist`] reads, for its errors.
pub(super) const LISTING: &str = "the generated pod webhook configurations";

/// True when a generated configuration exists: the catch-all `mpod.kb.io` is then left out
/// of the static configuration.
pub(super) async fn generated_exist(client: &kube::Client) -> Result<bool, kube::Error> {
    let api: kube::Api<MutatingWebhookConfiguration> = kube::Api::all(client.clone());
    let params = kube::api::ListParams::default()
        .labels(&format!("{GENERATED_LABEL}={GENERATED_LABEL_VALUE}"))
        .limit(1);
    Ok(!api.list_metadata(&params).await?.items.is_empty())
}
