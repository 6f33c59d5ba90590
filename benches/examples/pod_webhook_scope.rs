//! Measures the pod mutating webhook's scope on a real kube-apiserver (`../shared/realk8s`),
//! driven by `benches/realk8s/pod_webhook_scope.sh`, which starts the manager in each mode:
//!
//! - `pod_webhook_scope setup N`: creates `N` SidecarSets (900 of 1,000 over 100 equal
//!   `app=app-<i>` selectors, 50 with a `matchExpressions` selector of their own, 50 limited to
//!   namespaces labelled `team=t<i>`);
//! - `pod_webhook_scope sizes`: the mutating configurations, their entries and JSON sizes;
//! - `pod_webhook_scope latency LABEL`: 200 pod creations (server-side dry run, so nothing is
//!   stored) labelled `app=LABEL`, one at a time and then 10 at a time: mean, p50 and p99, and
//!   the webhook calls per pod that the apiserver's metrics count;
//! - `pod_webhook_scope edit`: moves one SidecarSet to a new selector and times until a pod
//!   with the new label gets its sidecar;
//! - `pod_webhook_scope cel-union URL CA_FILE`: replaces the generated entries by one entry
//!   whose single match condition is the union of every SidecarSet's selector in CEL.
//!
//! Uses `KUBECONFIG`. Not a criterion bench: it needs the real server and a manager.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Pod;
use kruise_api::apps::v1beta1::SidecarSet;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn sidecarset(i: usize) -> Value {
    let (selector, namespaces) = match i % 20 {
        0 => (
            json!({"matchExpressions": [{"key": "app", "operator": "In",
                    "values": [format!("expr-{i}"), format!("expr-{i}-b")]}]}),
            None,
        ),
        1 => (
            json!({"matchLabels": {"app": format!("app-{}", i % 100)}}),
            Some(json!({"matchLabels": {"team": format!("t{i}")}})),
        ),
        _ => (json!({"matchLabels": {"app": format!("app-{}", i % 100)}}), None),
    };
    let mut spec = json!({
        "selector": selector,
        "containers": [{"name": format!("agent-{i}"), "image": "registry.example/agent:v1"}]
    });
    if let Some(ns) = namespaces {
        spec["namespaceSelector"] = ns;
    }
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
           "metadata": {"name": format!("scope-{i:04}")}, "spec": spec})
}

async fn setup(client: &kube::Client, n: usize) -> Result<()> {
    let api: Api<SidecarSet> = Api::all(client.clone());
    let started = Instant::now();
    let mut tasks = futures::stream::FuturesUnordered::new();
    use futures::StreamExt;
    for i in 0..n {
        let api = api.clone();
        tasks.push(async move {
            let body: SidecarSet = serde_json::from_value(sidecarset(i))?;
            let pp = PatchParams::apply("pod-webhook-scope-bench").force();
            api.patch(&format!("scope-{i:04}"), &pp, &Patch::Apply(&body)).await?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        });
        if tasks.len() >= 20
            && let Some(r) = tasks.next().await
        {
            r?;
        }
    }
    while let Some(r) = tasks.next().await {
        r?;
    }
    println!("created {n} SidecarSets in {:.1}s", started.elapsed().as_secs_f64());
    Ok(())
}

async fn sizes(client: &kube::Client) -> Result<()> {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    for config in api.list(&ListParams::default()).await?.items {
        let json = serde_json::to_vec(&config)?;
        let webhooks = config.webhooks.as_ref().map_or(0, Vec::len);
        let conditions: usize = config
            .webhooks
            .iter()
            .flatten()
            .map(|w| {
                w.match_conditions
                    .as_ref()
                    .map_or(0, |c| c.iter().map(|c| c.expression.len()).sum())
            })
            .sum();
        println!(
            "configuration {}: {webhooks} entries, {} bytes of JSON (with managedFields), \
             {conditions} bytes of CEL",
            config.metadata.name.unwrap_or_default(),
            json.len()
        );
    }
    Ok(())
}

fn pod(app: &str, n: usize) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("probe-{app}-{n}"), "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "registry.example/p:v1"}]}
    }))
    .expect("a pod")
}

/// Webhook calls the apiserver made so far, by webhook name.
async fn webhook_calls(client: &kube::Client) -> Result<BTreeMap<String, f64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) =
            line.strip_prefix("apiserver_admission_webhook_admission_duration_seconds_count{")
        {
            let name = rest.split("name=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("");
            // Only the pod mutating entries (mpod.kb.io, p-<hash>.mpod.kb.io, the CEL union):
            // the manager's own writes go through the other webhooks meanwhile.
            if !name.ends_with("mpod.kb.io") {
                continue;
            }
            let value: f64 = line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
            *calls.entry(name.to_owned()).or_default() += value;
        }
    }
    Ok(calls)
}

fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64;
    format!("mean {mean:.2} ms, p50 {:.2} ms, p99 {:.2} ms", ms(at(0.5)), ms(at(0.99)))
}

async fn latency(client: &kube::Client, app: &str) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let dry = PostParams { dry_run: true, ..Default::default() };
    // Warm the connection and the apiserver's webhook clients.
    for i in 0..10 {
        let _ = api.create(&dry, &pod(app, 100_000 + i)).await;
    }
    let before = webhook_calls(client).await?;
    let (mut serial, mut refused, mut injected) = (Vec::new(), Vec::new(), 0);
    let mut reason = String::new();
    for i in 0..200 {
        let started = Instant::now();
        match api.create(&dry, &pod(app, i)).await {
            Ok(p) => {
                serial.push(started.elapsed());
                if p.spec.map_or(0, |s| s.containers.len()) > 1 {
                    injected += 1;
                }
            }
            Err(e) => {
                refused.push(started.elapsed());
                reason = e.to_string();
            }
        }
    }
    let failed = refused.len();
    let after = webhook_calls(client).await?;
    let calls: f64 = after.iter().map(|(k, v)| v - before.get(k).copied().unwrap_or(0.0)).sum();
    if serial.is_empty() {
        println!("app={app}: all 200 creations refused, {}: {reason}", summary(refused));
        return Ok(());
    }
    println!(
        "app={app} serial: {} ({} ok, {failed} refused, {injected} injected), {:.2} webhook calls per pod",
        summary(serial.clone()),
        serial.len(),
        calls / 200.0
    );
    let mut parallel = Vec::new();
    let started = Instant::now();
    for round in 0..20 {
        let batch = (0..10).map(|j| {
            let api = api.clone();
            let dry = dry.clone();
            let p = pod(app, 1000 + round * 10 + j);
            async move {
                let t = Instant::now();
                api.create(&dry, &p).await.map(|_| t.elapsed())
            }
        });
        parallel.extend(futures::future::join_all(batch).await.into_iter().flatten());
    }
    let wall = started.elapsed();
    if !parallel.is_empty() {
        println!(
            "app={app} 10 in parallel: {}, {:.0} pods/s",
            summary(parallel.clone()),
            parallel.len() as f64 / wall.as_secs_f64()
        );
    }
    Ok(())
}

async fn edit(client: &kube::Client) -> Result<()> {
    let sets: Api<SidecarSet> = Api::all(client.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let dry = PostParams { dry_run: true, ..Default::default() };
    let label = format!("moved-{}", std::process::id());
    let started = Instant::now();
    let patch = json!({"spec": {"selector": {"matchLabels": {"app": label}}}});
    sets.patch("scope-0002", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    let mut tries = 0;
    loop {
        tries += 1;
        let created = pods.create(&dry, &pod(&label, tries)).await?;
        if created.spec.map_or(0, |s| s.containers.len()) > 1 {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("no injection within 60s of the edit".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "edit: a pod with the new label got its sidecar {:.0} ms after the SidecarSet edit ({tries} tries)",
        started.elapsed().as_secs_f64() * 1000.0
    );
    Ok(())
}

/// One selector of `set` as CEL over the pod's labels (`l`).
fn cel(selector: &Value) -> String {
    let mut terms = Vec::new();
    for (k, v) in selector["matchLabels"].as_object().into_iter().flatten() {
        terms.push(format!("l[{k:?}] == {v}"));
    }
    for e in selector["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or("");
        let values = e["values"].to_string();
        terms.push(match e["operator"].as_str().unwrap_or("") {
            "In" => format!("({key:?} in l && l[{key:?}] in {values})"),
            "NotIn" => format!("!({key:?} in l && l[{key:?}] in {values})"),
            "Exists" => format!("{key:?} in l"),
            _ => format!("!({key:?} in l)"),
        });
    }
    // matchLabels keys must exist too.
    let keys: Vec<String> = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| format!("{k:?} in l"))
        .collect();
    let mut all = keys;
    all.extend(terms);
    if all.is_empty() { "true".into() } else { format!("({})", all.join(" && ")) }
}

async fn cel_union(client: &kube::Client, url: &str, ca_file: &str) -> Result<()> {
    let sets: Api<SidecarSet> = Api::all(client.clone());
    let mut alternatives = std::collections::BTreeSet::new();
    for set in sets.list(&ListParams::default()).await?.items {
        // namespaceObject is null for webhooks: a namespace selector cannot be expressed, so
        // such a set selects by its pod selector alone (more pods, never fewer).
        let selector = serde_json::to_value(&set.spec.selector)?;
        alternatives.insert(cel(&selector));
    }
    let expression = format!(
        "has(object.metadata.labels) && [object.metadata.labels].exists(l, {})",
        alternatives.into_iter().collect::<Vec<_>>().join(" || ")
    );
    let ca =
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, std::fs::read(ca_file)?);
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "kruise-pod-webhooks-cel"},
        "webhooks": [{
            "name": "union.mpod.kb.io",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("{url}/mutate-pod"), "caBundle": ca},
            "failurePolicy": "Fail", "sideEffects": "None", "reinvocationPolicy": "Never",
            "timeoutSeconds": 5,
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["pods"], "scope": "*"}],
            "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                "operator": "NotIn", "values": ["kube-system", "kruise-system"]}]},
            "matchConditions": [{"name": "selected", "expression": expression}]
        }]
    });
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let started = Instant::now();
    let body: MutatingWebhookConfiguration = serde_json::from_value(config)?;
    api.patch(
        "kruise-pod-webhooks-cel",
        &PatchParams::apply("bench").force(),
        &Patch::Apply(&body),
    )
    .await?;
    println!(
        "cel-union: {} bytes of CEL written in {:.0} ms",
        expression.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    for config in api.list(&ListParams::default()).await?.items {
        let name = config.metadata.name.unwrap_or_default();
        if name.starts_with("kruise-pod-webhooks-") && name != "kruise-pod-webhooks-cel" {
            api.delete(&name, &DeleteParams::default()).await?;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let client = kube::Client::try_default().await?;
    match args.first().map(String::as_str) {
        Some("setup") => {
            setup(&client, args.get(1).and_then(|n| n.parse().ok()).unwrap_or(1000)).await
        }
        Some("sizes") => sizes(&client).await,
        Some("latency") => latency(&client, args.get(1).map_or("none", String::as_str)).await,
        Some("edit") => edit(&client).await,
        Some("cel-union") => {
            cel_union(
                &client,
                args.get(1).map_or("", String::as_str),
                args.get(2).map_or("", String::as_str),
            )
            .await
        }
        _ => {
            eprintln!(
                "usage: pod_webhook_scope setup N | sizes | latency LABEL | edit | cel-union URL CA_FILE"
            );
            std::process::exit(2);
        }
    }
}
