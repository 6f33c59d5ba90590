//! The defaults the real API server fills into built-in objects on create and update, for the
//! fields controllers commonly read. Everything else is stored as sent.

use serde_json::{Map, Value, json};

fn obj_at<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = v;
    for p in path {
        cur = cur.as_object_mut()?.get_mut(*p)?;
    }
    cur.as_object_mut()
}

fn put_default(m: &mut Map<String, Value>, key: &str, v: Value) {
    if !m.contains_key(key) || m.get(key) == Some(&Value::Null) {
        m.insert(key.into(), v);
    }
}

/// kube-apiserver's default pull policy: `Always` for a `latest` tag, named or implied (no
/// tag and no digest), else `IfNotPresent`, which an image that does not parse gets too.
fn image_pull_policy(image: &str) -> &'static str {
    match kruise_core::image::ImageRef::parse(image) {
        Ok(r) if r.tag.as_deref() == Some("latest") => "Always",
        Ok(r) if r.tag.is_none() && r.digest.is_none() => "Always",
        _ => "IfNotPresent",
    }
}

fn default_container(c: &mut Value) {
    let Some(m) = c.as_object_mut() else { return };
    put_default(m, "terminationMessagePath", json!("/dev/termination-log"));
    put_default(m, "terminationMessagePolicy", json!("File"));
    let image = m.get("image").and_then(Value::as_str).unwrap_or("").to_string();
    put_default(m, "imagePullPolicy", json!(image_pull_policy(&image)));
    put_default(m, "resources", json!({}));
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(Value::Object(probe)) = m.get_mut(probe) {
            default_probe(probe);
        }
    }
    if let Some(Value::Object(lifecycle)) = m.get_mut("lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(Value::Object(get)) =
                lifecycle.get_mut(hook).and_then(|h| h.get_mut("httpGet"))
            {
                default_http_get(get);
            }
        }
    }
    if let Some(Value::Array(ports)) = m.get_mut("ports") {
        for p in ports {
            if let Some(pm) = p.as_object_mut() {
                put_default(pm, "protocol", json!("TCP"));
            }
        }
    }
    // `SetDefaults_ObjectFieldSelector`: a field reference reads `v1` unless it says otherwise.
    if let Some(Value::Array(env)) = m.get_mut("env") {
        for var in env {
            if let Some(Value::Object(field_ref)) = var.pointer_mut("/valueFrom/fieldRef") {
                put_default(field_ref, "apiVersion", json!("v1"));
            }
        }
    }
}

/// Sets `key` to `v` where it is missing, null or zero (kube-apiserver's defaulting of a
/// non-pointer number cannot tell 0 from unset).
fn put_if_zero(m: &mut Map<String, Value>, key: &str, v: i64) {
    if m.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
        m.insert(key.into(), json!(v));
    }
}

/// A claim's volume mode (`Filesystem`) and phase (`Pending`).
fn default_claim(claim: &mut Map<String, Value>) {
    if let Some(Value::Object(spec)) = claim.get_mut("spec") {
        put_default(spec, "volumeMode", json!("Filesystem"));
    }
    let status = claim.entry("status").or_insert_with(|| json!({}));
    if status.is_null() {
        *status = json!({});
    }
    if let Value::Object(status) = status {
        put_default(status, "phase", json!("Pending"));
    }
}

/// A probe's timings and its HTTP action's defaults.
fn default_probe(probe: &mut Map<String, Value>) {
    put_if_zero(probe, "timeoutSeconds", 1);
    put_if_zero(probe, "periodSeconds", 10);
    put_if_zero(probe, "successThreshold", 1);
    put_if_zero(probe, "failureThreshold", 3);
    if let Some(Value::Object(get)) = probe.get_mut("httpGet") {
        default_http_get(get);
    }
}

/// An HTTP GET action's path `/` and scheme `HTTP`.
fn default_http_get(get: &mut Map<String, Value>) {
    for (key, value) in [("path", "/"), ("scheme", "HTTP")] {
        if get.get(key).and_then(Value::as_str).unwrap_or_default().is_empty() {
            get.insert(key.into(), json!(value));
        }
    }
}

/// A pod's (not a template's: kube-apiserver defaults them on the Pod alone) containers'
/// requests: a resource with a limit and no request is requested at its limit.
fn requests_from_limits(spec: &mut Map<String, Value>) {
    for key in ["containers", "initContainers"] {
        let Some(Value::Array(cs)) = spec.get_mut(key) else { continue };
        for c in cs {
            if let Some(res) = c.get_mut("resources").and_then(Value::as_object_mut)
                && let Some(limits) = res.get("limits").and_then(Value::as_object).cloned()
            {
                let req = res.entry("requests").or_insert_with(|| json!({}));
                if req.is_null() {
                    *req = json!({});
                }
                if let Some(rm) = req.as_object_mut() {
                    for (k, v) in limits {
                        rm.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
}

/// The sources a volume may name (each a `VolumeSource` field).
const VOLUME_SOURCES: [&str; 30] = [
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// The volume sources set on `volume`, in the order kube-apiserver checks them.
fn volume_sources(volume: &Value) -> Vec<&'static str> {
    VOLUME_SOURCES
        .iter()
        .copied()
        .filter(|s| volume.get(*s).is_some_and(|v| !v.is_null()))
        .collect()
}

/// A volume's defaults: an empty dir when it names no source, the file mode of the sources
/// that write files (0644), and the unset type of a host path.
fn default_volume(volume: &mut Value) {
    if volume_sources(volume).is_empty()
        && let Some(m) = volume.as_object_mut()
    {
        m.insert("emptyDir".into(), json!({}));
    }
    let Some(m) = volume.as_object_mut() else { return };
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(Value::Object(s)) = m.get_mut(source) {
            put_default(s, "defaultMode", json!(420));
        }
    }
    if let Some(Value::Object(s)) = m.get_mut("hostPath") {
        put_default(s, "type", json!(""));
    }
    // Field references of downward API files read `v1` unless they say otherwise.
    let mut items: Vec<&mut Value> = Vec::new();
    for (key, source) in m.iter_mut() {
        match key.as_str() {
            "downwardAPI" => {
                if let Some(Value::Array(list)) = source.get_mut("items") {
                    items.extend(list.iter_mut());
                }
            }
            "projected" => {
                let sources = source.get_mut("sources").and_then(Value::as_array_mut);
                for source in sources.into_iter().flatten() {
                    if let Some(Value::Array(list)) =
                        source.get_mut("downwardAPI").and_then(|d| d.get_mut("items"))
                    {
                        items.extend(list.iter_mut());
                    }
                }
            }
            _ => {}
        }
    }
    for item in items {
        if let Some(Value::Object(field_ref)) = item.get_mut("fieldRef") {
            put_default(field_ref, "apiVersion", json!("v1"));
        }
    }
}

/// Pod spec defaults (restart policy, DNS policy, grace period, scheduler, container fields).
pub fn pod_spec(spec: &mut Map<String, Value>) {
    put_default(spec, "restartPolicy", json!("Always"));
    put_default(spec, "terminationGracePeriodSeconds", json!(30));
    put_default(spec, "dnsPolicy", json!("ClusterFirst"));
    put_default(spec, "securityContext", json!({}));
    put_default(spec, "schedulerName", json!("default-scheduler"));
    for key in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(Value::Array(cs)) = spec.get_mut(key) {
            cs.iter_mut().for_each(default_container);
        }
    }
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        volumes.iter_mut().for_each(default_volume);
    }
}

/// A pod's QoS class, as the real server computes it at creation.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let req = c.pointer("/resources/requests").and_then(Value::as_object);
        let lim = c.pointer("/resources/limits").and_then(Value::as_object);
        let relevant = |m: Option<&Map<String, Value>>| {
            m.map(|m| {
                m.iter()
                    .filter(|(k, _)| *k == "cpu" || *k == "memory")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
        };
        let (r, l) = (relevant(req), relevant(lim));
        if !r.is_empty() || !l.is_empty() {
            any = true;
        }
        let has_both_limits = l.len() == 2;
        let req_eq_lim = r.iter().all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v));
        if !has_both_limits || !req_eq_lim {
            guaranteed = false;
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

fn template(obj: &mut Value, path: &[&str]) {
    if let Some(spec) = obj_at(obj, path) {
        pod_spec(spec);
    }
}

/// The DefaultTolerationSeconds admission plugin: a pod that does not already tolerate the
/// `not-ready` or `unreachable` NoExecute taint gets a 300-second toleration for it, after
/// its own tolerations.
fn default_toleration_seconds(spec: &mut Map<String, Value>) {
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    let Some(list) = tolerations.as_array_mut() else { return };
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let tolerated = list.iter().any(|t| {
            let str_of = |f: &str| t.get(f).and_then(Value::as_str).unwrap_or_default();
            let key_matches = str_of("key") == key
                || (str_of("key").is_empty() && str_of("operator") == "Exists");
            let effect = str_of("effect");
            key_matches && (effect.is_empty() || effect == "NoExecute")
        });
        if !tolerated {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
}

/// A Job's defaults, and on create (once it has a uid) the selector kube-apiserver generates
/// unless `manualSelector` is true, with the labels it adds to the template and, when the
/// Job has none, to the Job.
fn job(obj: &mut Value) {
    let uid = crate::util::meta_str(obj, "uid").unwrap_or_default().to_string();
    let name = crate::util::meta_str(obj, "name").unwrap_or_default().to_string();
    let Some(spec) = obj_at(obj, &["spec"]) else { return };
    let neither = !spec.contains_key("completions") && !spec.contains_key("parallelism");
    if neither {
        spec.insert("completions".into(), json!(1));
    }
    put_default(spec, "parallelism", json!(1));
    let per_index = spec.get("backoffLimitPerIndex").is_some_and(|v| !v.is_null());
    put_default(spec, "backoffLimit", json!(if per_index { i32::MAX } else { 6 }));
    put_default(spec, "completionMode", json!("NonIndexed"));
    put_default(spec, "suspend", json!(false));
    put_default(spec, "manualSelector", json!(false));
    let failure_policy = spec.get("podFailurePolicy").is_some_and(|v| !v.is_null());
    put_default(
        spec,
        "podReplacementPolicy",
        json!(if failure_policy { "Failed" } else { "TerminatingOrFailed" }),
    );
    let manual = spec.get("manualSelector") == Some(&json!(true));
    if manual || uid.is_empty() || spec.contains_key("selector") {
        return;
    }
    spec.insert(
        "selector".into(),
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    let mut labels = Map::new();
    if let Some(template) = obj_at(obj, &["spec", "template"]) {
        let meta = template.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let l = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = l.as_object_mut() {
                for (k, v) in [
                    ("batch.kubernetes.io/controller-uid", &uid),
                    ("batch.kubernetes.io/job-name", &name),
                    ("controller-uid", &uid),
                    ("job-name", &name),
                ] {
                    put_default(l, k, json!(v));
                }
                labels = l.clone();
            }
        }
    }
    if let Some(meta) = crate::util::meta_mut(obj) {
        let empty = meta.get("labels").and_then(Value::as_object).is_none_or(|l| l.is_empty());
        if empty {
            meta.insert("labels".into(), Value::Object(labels));
        }
    }
}

/// An EndpointSlice as kube-apiserver stores it: ports named `""` and `TCP` unless said
/// otherwise (the v1 defaults); `conditions` always present on an endpoint and
/// `deprecatedTopology` dropped (not writable through v1); no ports or endpoints read back as
/// `null` (both fields lack `omitempty`, and an empty list does not survive storage).
fn endpoint_slice(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    for key in ["endpoints", "ports"] {
        let empty = m.get(key).is_none_or(|v| v.as_array().is_some_and(Vec::is_empty));
        if empty {
            m.insert(key.into(), Value::Null);
        }
    }
    if let Some(Value::Array(ports)) = m.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            put_default(p, "name", json!(""));
            put_default(p, "protocol", json!("TCP"));
        }
    }
    if let Some(Value::Array(endpoints)) = m.get_mut("endpoints") {
        for e in endpoints.iter_mut().filter_map(Value::as_object_mut) {
            put_default(e, "conditions", json!({}));
            e.remove("deprecatedTopology");
        }
    }
}

/// Applies the defaults of a built-in kind (`group` and `plural` name the resource).
pub fn apply(group: &str, plural: &str, obj: &mut Value) {
    match (group, plural) {
        ("", "pods") => {
            if let Some(spec) = obj_at(obj, &["spec"]) {
                pod_spec(spec);
                requests_from_limits(spec);
                put_default(spec, "serviceAccountName", json!("default"));
                put_default(spec, "enableServiceLinks", json!(true));
                put_default(spec, "priority", json!(0));
                put_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
                default_toleration_seconds(spec);
            }
        }
        ("", "podtemplates") => template(obj, &["template", "spec"]),
        ("apps", "deployments") => {
            if let Some(spec) = obj_at(obj, &["spec"]) {
                put_default(spec, "replicas", json!(1));
                put_default(spec, "revisionHistoryLimit", json!(10));
                put_default(spec, "progressDeadlineSeconds", json!(600));
                // An empty strategy (as `kubectl create deployment` sends) gets the default
                // type, and RollingUpdate its default parameters.
                let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
                if let Value::Object(strategy) = strategy {
                    put_default(strategy, "type", json!("RollingUpdate"));
                    if strategy.get("type") == Some(&json!("RollingUpdate")) {
                        let rolling = strategy.entry("rollingUpdate").or_insert_with(|| json!({}));
                        if let Value::Object(rolling) = rolling {
                            put_default(rolling, "maxUnavailable", json!("25%"));
                            put_default(rolling, "maxSurge", json!("25%"));
                        }
                    }
                }
            }
            template(obj, &["spec", "template", "spec"]);
        }
        ("apps", "replicasets") | ("", "replicationcontrollers") => {
            if let Some(spec) = obj_at(obj, &["spec"]) {
                put_default(spec, "replicas", json!(1));
            }
            template(obj, &["spec", "template", "spec"]);
        }
        ("apps", "statefulsets") => {
            if let Some(spec) = obj_at(obj, &["spec"]) {
                put_default(spec, "replicas", json!(1));
                put_default(spec, "podManagementPolicy", json!("OrderedReady"));
                put_default(spec, "revisionHistoryLimit", json!(10));
                // No type: RollingUpdate with empty parameters. A RollingUpdate's parameters,
                // when present, get partition 0; an explicit RollingUpdate without parameters
                // is left without them, as upstream does. `maxUnavailable` stays unset:
                // kube-apiserver 1.36.2 fills it only under MaxUnavailableStatefulSet, which
                // its `-h` lists as Beta and off by default (and probe_diff.py saw it unset).
                let strategy = spec.entry("updateStrategy").or_insert_with(|| json!({}));
                if let Value::Object(strategy) = strategy {
                    let untyped =
                        strategy.get("type").is_none_or(|t| t.is_null() || t.as_str() == Some(""));
                    if untyped {
                        strategy.insert("type".into(), json!("RollingUpdate"));
                        put_default(strategy, "rollingUpdate", json!({}));
                    }
                    if strategy.get("type") == Some(&json!("RollingUpdate"))
                        && let Some(Value::Object(rolling)) = strategy.get_mut("rollingUpdate")
                    {
                        put_default(rolling, "partition", json!(0));
                    }
                }
                put_default(
                    spec,
                    "persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                );
                // Each claim template is defaulted as a claim, and says what it is.
                if let Some(Value::Array(claims)) = spec.get_mut("volumeClaimTemplates") {
                    for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
                        put_default(claim, "apiVersion", json!("v1"));
                        put_default(claim, "kind", json!("PersistentVolumeClaim"));
                        default_claim(claim);
                    }
                }
            }
            template(obj, &["spec", "template", "spec"]);
        }
        ("", "persistentvolumeclaims") => {
            if let Some(claim) = obj.as_object_mut() {
                default_claim(claim);
            }
        }
        ("apps", "daemonsets") => {
            if let Some(spec) = obj_at(obj, &["spec"]) {
                put_default(spec, "revisionHistoryLimit", json!(10));
                put_default(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
                );
            }
            template(obj, &["spec", "template", "spec"]);
        }
        ("batch", "jobs") => {
            job(obj);
            template(obj, &["spec", "template", "spec"]);
        }
        ("batch", "cronjobs") => {
            if let Some(spec) = obj_at(obj, &["spec"]) {
                put_default(spec, "concurrencyPolicy", json!("Allow"));
                put_default(spec, "suspend", json!(false));
                put_default(spec, "successfulJobsHistoryLimit", json!(3));
                put_default(spec, "failedJobsHistoryLimit", json!(1));
            }
            template(obj, &["spec", "jobTemplate", "spec", "template", "spec"]);
        }
        ("", "services") => {
            if let Some(spec) = obj_at(obj, &["spec"]) {
                put_default(spec, "type", json!("ClusterIP"));
                put_default(spec, "sessionAffinity", json!("None"));
                let type_ = spec.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
                if type_ != "ExternalName" {
                    put_default(spec, "internalTrafficPolicy", json!("Cluster"));
                }
                if matches!(type_.as_str(), "NodePort" | "LoadBalancer") {
                    put_default(spec, "externalTrafficPolicy", json!("Cluster"));
                }
                if type_ == "LoadBalancer" {
                    put_default(spec, "allocateLoadBalancerNodePorts", json!(true));
                }
                if let Some(Value::Array(ports)) = spec.get_mut("ports") {
                    for p in ports {
                        if let Some(pm) = p.as_object_mut() {
                            put_default(pm, "protocol", json!("TCP"));
                            if let Some(port) = pm.get("port").cloned() {
                                put_default(pm, "targetPort", port);
                            }
                        }
                    }
                }
            }
        }
        ("discovery.k8s.io", "endpointslices") => endpoint_slice(obj),
        ("", "namespaces") => {
            if let Some(m) = obj.as_object_mut() {
                let spec = m.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    put_default(spec, "finalizers", json!(["kubernetes"]));
                }
            }
            let name = crate::util::meta_str(obj, "name").unwrap_or_default().to_string();
            if let Some(meta) = crate::util::meta_mut(obj) {
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    l.insert("kubernetes.io/metadata.name".into(), json!(name));
                }
            }
        }
        ("", "secrets") => {
            if let Some(m) = obj.as_object_mut() {
                put_default(m, "type", json!("Opaque"));
                // `stringData` is write-only: each value goes into `data`, base64-encoded,
                // over a `data` entry of the same key, and `stringData` itself is not kept.
                // (A value that is not a string stays where it is, for validation to see.)
                if let Some(Value::Object(strings)) = m.remove("stringData") {
                    use base64::Engine as _;
                    let mut kept = Map::new();
                    let data = m.entry("data").or_insert_with(|| json!({}));
                    if data.is_null() {
                        *data = json!({});
                    }
                    for (key, value) in strings {
                        match (value.as_str(), data.as_object_mut()) {
                            (Some(text), Some(data)) => {
                                let encoded =
                                    base64::engine::general_purpose::STANDARD.encode(text);
                                data.insert(key, json!(encoded));
                            }
                            _ => {
                                kept.insert(key, value);
                            }
                        }
                    }
                    if !kept.is_empty() {
                        m.insert("stringData".into(), Value::Object(kept));
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policies_follow_the_parsed_tag() {
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("registry.example:5000/app", "Always"),
            ("registry.example:5000/app:v1", "IfNotPresent"),
            (&format!("nginx@sha256:{}", "a".repeat(64)), "IfNotPresent"),
            (&format!("nginx:latest@sha256:{}", "a".repeat(64)), "Always"),
            // An image that does not parse has no tag, and so no `latest`.
            ("bad image", "IfNotPresent"),
            ("Upper/Case", "IfNotPresent"),
        ] {
            assert_eq!(image_pull_policy(image), policy, "{image}");
        }
    }

    #[test]
    fn probes_and_http_hooks_get_their_defaults() {
        let mut spec = json!({"containers": [{"name": "a", "image": "x:1",
            "readinessProbe": {"httpGet": {"port": 80}, "periodSeconds": 0},
            "livenessProbe": {"exec": {"command": ["true"]}, "failureThreshold": 5},
            "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}}}]});
        pod_spec(spec.as_object_mut().expect("an object"));
        let c = &spec["containers"][0];
        assert_eq!(
            c["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["livenessProbe"]["failureThreshold"], 5);
        assert_eq!(c["livenessProbe"]["periodSeconds"], 10);
        assert_eq!(
            c["lifecycle"]["preStop"]["httpGet"],
            json!({"port": 8080, "path": "/stop", "scheme": "HTTP"})
        );
    }

    #[test]
    fn default_tolerations_join_the_pods_own() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "x"}], "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        ]}});
        apply("", "pods", &mut pod);
        let keys: Vec<(&str, i64)> = pod["spec"]["tolerations"]
            .as_array()
            .expect("tolerations")
            .iter()
            .map(|t| {
                (
                    t["key"].as_str().unwrap_or_default(),
                    t["tolerationSeconds"].as_i64().unwrap_or(-1),
                )
            })
            .collect();
        assert_eq!(
            keys,
            [
                ("dedicated", -1),
                ("node.kubernetes.io/not-ready", 60),
                ("node.kubernetes.io/unreachable", 300)
            ]
        );
        // Applying again (an update) adds nothing.
        let before = pod.clone();
        apply("", "pods", &mut pod);
        assert_eq!(pod, before);
    }
}
