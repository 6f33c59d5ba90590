//! SidecarSet on the playground with kubectl: a SidecarSet's sidecar is injected into the
//! pods a Deployment creates (and only those it selects), a v1alpha1 SidecarSet is served, and
//! a SidecarSet with a bad regex or a container name another SidecarSet injects into the same
//! pods is refused, naming the field; each version of a SidecarSet is kept as a
//! ControllerRevision that `injectionStrategy.revision` can pin injection to.

use std::time::Duration;

use serde_json::Value;

use crate::common::{Playground, wait_for};

fn sidecarset(
    api_version: &str,
    name: &str,
    selector: &str,
    container: &str,
    extra: &str,
) -> String {
    format!(
        "apiVersion: {api_version}\nkind: SidecarSet\nmetadata:\n  name: {name}\nspec:\n  selector:\n    matchLabels: {{app: {selector}}}\n  containers:\n  - name: {container}\n    image: registry.example/log-agent:v1\n    volumeMounts:\n    - {{name: logs, mountPath: /var/log/app}}\n{extra}  volumes:\n  - name: logs\n    emptyDir: {{}}\n"
    )
}

fn pods(k: &crate::common::Kubectl, selector: &str) -> Vec<Value> {
    k.json(&["get", "pods", "-l", selector, "-o", "json"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn container_names(pod: &Value) -> Vec<String> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// Applies the SidecarSet `log-agent` (selecting `app=web`; `extra` is appended to its
/// container), waits until it injects, then rolls out the Deployment `web` with `replicas`
/// pods; returns their UIDs.
fn web_with_log_agent(k: &crate::common::Kubectl, extra: &str, replicas: usize) -> Vec<Value> {
    k.ok_stdin(
        &["apply", "-f", "-"],
        &sidecarset("apps.kruise.io/v1beta1", "log-agent", "web", "log-agent", extra),
    );
    wait_until_injected(k, "web", "log-agent");
    k.ok(&["create", "deployment", "web", "--image=nginx:1", &format!("--replicas={replicas}")]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    pods(k, "app=web").iter().map(|p| p["metadata"]["uid"].clone()).collect()
}

/// Waits until the pod webhook injects `container` into a pod labelled `app: <app>` (its
/// SidecarSet cache has caught up), trying with server-side dry-run creations.
///
/// The probe counts only once the catch-all `mpod.kb.io` has left the static configuration:
/// until then it may be the catch-all that injects, and the generated entry that will send
/// such pods to the webhook may not be written yet (pods created in that gap would go
/// without their sidecar).
pub(crate) fn wait_until_injected(k: &crate::common::Kubectl, app: &str, container: &str) {
    let probe = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: probe\n  labels: {{app: {app}}}\nspec:\n  containers:\n  - name: main\n    image: nginx:1\n"
    );
    crate::common::wait_for_catch_all_pod_webhook_removed(k);
    wait_for("the pod webhook to see the SidecarSet", Duration::from_secs(30), || {
        let out =
            k.run_with(&["create", "--dry-run=server", "-o", "json", "-f", "-"], Some(&probe));
        let pod: Value = serde_json::from_str(&out.stdout).ok()?;
        container_names(&pod).iter().any(|c| c.starts_with(container)).then_some(())
    });
}

#[test]
fn a_sidecarset_injects_into_the_pods_it_selects_and_bad_ones_are_refused() {
    let pg = Playground::start(2, &[]);
    let k = &pg.kubectl;

    // Bad input is refused, naming the field.
    let bad_regex = sidecarset(
        "apps.kruise.io/v1beta1",
        "bad",
        "web",
        "log-agent",
        "    resourcesPolicy:\n      targetContainerMode: sum\n      targetContainersNameRegex: \"([a-z\"\n      resourceExpr:\n        limits:\n          cpu: \"100m\"\n",
    );
    let out = k.run_with(&["create", "-f", "-"], Some(&bad_regex));
    assert!(!out.ok, "a bad regex is refused");
    assert!(
        out.stderr.contains(r#"admission webhook "vsidecarset.kb.io" denied the request"#)
            && out.stderr.contains("targetContainersNameRegex"),
        "{}",
        out.stderr
    );

    // `patchPodMetadata` needs a rule of the `kruise-configuration` whitelist, read at each
    // write: refused without the ConfigMap, then admitted once a rule allows the key.
    let patcher = sidecarset(
        "apps.kruise.io/v1beta1",
        "patcher",
        "meta",
        "patcher-agent",
        "  patchPodMetadata:\n  - annotations:\n      oom-score: '{\"log-agent\": 1}'\n",
    );
    let out = k.run_with(&["create", "-f", "-"], Some(&patcher));
    assert!(
        !out.ok
            && out.stderr.contains("spec.patchPodMetadata")
            && out.stderr.contains("whitelist not found"),
        "{}",
        out.stderr
    );
    k.ok(&["create", "configmap", "kruise-configuration", "-n", "kruise-system",
        r#"--from-literal=SidecarSet_PatchPodMetadata_WhiteList={"rules":[{"allowedAnnotationKeyExprs":["^oom-"]}]}"#]);
    k.ok_stdin(&["create", "-f", "-"], &patcher);
    k.ok(&["delete", "sidecarset", "patcher"]);

    // A good one: defaulted by the mutating webhook, then it injects into new pods.
    let good = sidecarset("apps.kruise.io/v1beta1", "log-agent", "web", "log-agent", "");
    k.ok_stdin(&["apply", "-f", "-"], &good);
    let stored = k.json(&["get", "sidecarset", "log-agent", "-o", "json"]);
    assert_eq!(stored["spec"]["updateStrategy"]["type"], "RollingUpdate", "{stored}");
    assert!(stored["metadata"]["annotations"]["kruise.io/sidecarset-hash"].is_string(), "{stored}");
    // A second SidecarSet that would inject the same container into the same pods is refused.
    let clash = sidecarset("apps.kruise.io/v1beta1", "clash", "web", "log-agent", "");
    let out = k.run_with(&["create", "-f", "-"], Some(&clash));
    assert!(!out.ok && out.stderr.contains("log-agent"), "{}", out.stderr);
    // The same kind at v1alpha1 is served too (a different selector).
    let alpha = sidecarset("apps.kruise.io/v1alpha1", "metrics", "db", "metrics-agent", "");
    k.ok_stdin(&["apply", "-f", "-"], &alpha);

    // Pods can be created as soon as the webhook's cache shows the SidecarSet.
    wait_until_injected(k, "web", "log-agent");
    k.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=2"]);
    k.ok(&["create", "deployment", "other", "--image=nginx:1", "--replicas=1"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    k.ok(&["rollout", "status", "deployment/other", "--timeout=60s"]);
    let web = wait_for("two web pods", Duration::from_secs(30), || {
        let p = pods(k, "app=web");
        (p.len() == 2).then_some(p)
    });
    for pod in &web {
        assert_eq!(container_names(pod), ["log-agent", "nginx"], "sidecar first: {pod}");
        let notes = &pod["metadata"]["annotations"];
        assert!(
            notes["kruise.io/sidecarset-hash"].as_str().is_some_and(|h| h.contains("log-agent")),
            "{notes}"
        );
        assert!(
            pod["spec"]["volumes"].to_string().contains("\"logs\""),
            "the sidecar's volume: {pod}"
        );
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    }
    // A pod the SidecarSet does not select is left alone.
    let other = pods(k, "app=other");
    assert_eq!(container_names(&other[0]), ["nginx"]);
    assert!(other[0]["metadata"]["annotations"]["kruise.io/sidecarset-hash"].is_null());

    // The controller reports what it selects.
    wait_for("the SidecarSet's status", Duration::from_secs(30), || {
        let st = k.json(&["get", "sidecarset", "log-agent", "-o", "json"])["status"].clone();
        (st["matchedPods"] == 2 && st["updatedPods"] == 2 && st["readyPods"] == 2).then_some(())
    });

    // A new sidecar image is rolled out in place, one pod at a time (maxUnavailable 1): the
    // pods stay, the app containers never restart.
    let uids: Vec<Value> = web.iter().map(|p| p["metadata"]["uid"].clone()).collect();
    k.ok(&["patch", "sidecarset", "log-agent", "--type=json", "-p",
        r#"[{"op": "replace", "path": "/spec/containers/0/image", "value": "registry.example/log-agent:v2"}]"#]);
    let mut most_down = 0;
    let upgraded = wait_for("both sidecars on v2", Duration::from_secs(60), || {
        let now = pods(k, "app=web");
        let down = now
            .iter()
            .filter(|p| {
                !p["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .count();
        most_down = most_down.max(down);
        let done = now.len() == 2
            && now.iter().all(|p| {
                p["spec"]["containers"][0]["image"] == "registry.example/log-agent:v2"
                    && p["status"]["containerStatuses"].as_array().is_some_and(|cs| {
                        cs.iter().all(|c| c["ready"] == true)
                            && cs.iter().any(|c| {
                                c["name"] == "log-agent"
                                    && c["image"] == "registry.example/log-agent:v2"
                            })
                    })
            });
        done.then_some(now)
    });
    assert!(most_down <= 1, "at most one pod down at a time: {most_down}");
    for pod in &upgraded {
        assert!(uids.contains(&pod["metadata"]["uid"]), "upgraded in place: {pod}");
        let app = pod["status"]["containerStatuses"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "nginx").cloned())
            .expect("the app container");
        assert_eq!(app["restartCount"], 0, "the app container never restarts: {app}");
    }
    wait_for("every pod updated in the status", Duration::from_secs(30), || {
        let st = k.json(&["get", "sidecarset", "log-agent", "-o", "json"])["status"].clone();
        (st["updatedPods"] == 2 && st["updatedReadyPods"] == 2).then_some(())
    });
}

/// Hot upgrade: the sidecar is injected as a `-1`/`-2` pair (the second on the empty image);
/// a new image goes to the idle one, which becomes the working one, and the old one is reset
/// to the empty image, with the pod never restarted.
#[test]
fn a_hot_upgrade_swaps_the_pair_in_place() {
    let pg = Playground::start(1, &[]);
    let k = &pg.kubectl;
    let hot = "    upgradeStrategy:\n      upgradeType: HotUpgrade\n      hotUpgradeEmptyImage: registry.example/empty:1\n";
    k.ok_stdin(
        &["apply", "-f", "-"],
        &sidecarset("apps.kruise.io/v1beta1", "proxy", "web", "proxy", hot),
    );
    wait_until_injected(k, "web", "proxy");
    k.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=1"]);
    k.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let pod = pods(k, "app=web").remove(0);
    assert_eq!(container_names(&pod), ["proxy-1", "proxy-2", "nginx"], "{pod}");
    let image = |p: &Value, c: &str| {
        p["spec"]["containers"]
            .as_array()
            .and_then(|cs| cs.iter().find(|x| x["name"] == c))
            .map(|x| x["image"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(image(&pod, "proxy-1"), "registry.example/log-agent:v1");
    assert_eq!(image(&pod, "proxy-2"), "registry.example/empty:1");
    let working = |p: &Value| {
        p["metadata"]["annotations"]["kruise.io/sidecarset-working-hotupgrade-container"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(working(&pod).contains("proxy-1"), "{}", working(&pod));

    k.ok(&["patch", "sidecarset", "proxy", "--type=json", "-p",
        r#"[{"op": "replace", "path": "/spec/containers/0/image", "value": "registry.example/log-agent:v2"}]"#]);
    let swapped = wait_for("the pair swapped", Duration::from_secs(60), || {
        let p = pods(k, "app=web").into_iter().next()?;
        (image(&p, "proxy-2") == "registry.example/log-agent:v2"
            && image(&p, "proxy-1") == "registry.example/empty:1"
            && working(&p).contains("proxy-2"))
        .then_some(p)
    });
    assert_eq!(swapped["metadata"]["uid"], pod["metadata"]["uid"], "the same pod");
    let app = swapped["status"]["containerStatuses"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "nginx").cloned())
        .expect("the app container");
    assert_eq!(app["restartCount"], 0, "{app}");
}

/// A manager killed (SIGKILL) in the middle of a sidecar rollout: the next one finishes it,
/// still within maxUnavailable, with every pod kept.
#[test]
fn a_manager_killed_mid_upgrade_converges() {
    let cluster = crate::pub_budget::cluster();
    let k = &cluster.kubectl;
    let (mut manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    // A slow rollout: pods become ready 1.5 s after a restart (readiness probe on the sidecar).
    let probe = "    readinessProbe:\n      exec: {command: [\"true\"]}\n      periodSeconds: 1\n";
    let before = web_with_log_agent(k, probe, 4);
    assert_eq!(before.len(), 4);
    assert!(pods(k, "app=web").iter().all(|p| container_names(p)[0] == "log-agent"));

    k.ok(&["patch", "sidecarset", "log-agent", "--type=json", "-p",
        r#"[{"op": "replace", "path": "/spec/containers/0/image", "value": "registry.example/log-agent:v2"}]"#]);
    let on_v2 = |p: &Value| p["spec"]["containers"][0]["image"] == "registry.example/log-agent:v2";
    wait_for("the first sidecar upgraded", Duration::from_secs(60), || {
        pods(k, "app=web").iter().any(on_v2).then_some(())
    });
    manager.kill();
    let upgraded = pods(k, "app=web").iter().filter(|p| on_v2(p)).count();
    assert!(upgraded < 4, "killed mid-rollout ({upgraded} of 4 upgraded)");

    let (_manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    let done = wait_for("every sidecar on v2 and ready", Duration::from_secs(90), || {
        let now = pods(k, "app=web");
        (now.len() == 4
            && now.iter().all(|p| {
                on_v2(p)
                    && p["status"]["containerStatuses"]
                        .as_array()
                        .is_some_and(|cs| cs.iter().all(|c| c["ready"] == true))
            }))
        .then_some(now)
    });
    for pod in &done {
        assert!(before.contains(&pod["metadata"]["uid"]), "no pod was replaced: {pod}");
    }
    wait_for("the status", Duration::from_secs(30), || {
        let st = k.json(&["get", "sidecarset", "log-agent", "-o", "json"])["status"].clone();
        (st["updatedReadyPods"] == 4).then_some(())
    });
}

/// The sidecar image the pod webhook would inject into a new pod labelled `app: <app>` (a
/// server-side dry-run creation), if any.
fn injected_image(k: &crate::common::Kubectl, app: &str, container: &str) -> Option<String> {
    let probe = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: probe\n  labels: {{app: {app}}}\nspec:\n  containers:\n  - name: main\n    image: nginx:1\n"
    );
    let out = k.run_with(&["create", "--dry-run=server", "-o", "json", "-f", "-"], Some(&probe));
    let pod: Value = serde_json::from_str(&out.stdout).ok()?;
    pod["spec"]["containers"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == container)
        .and_then(|c| c["image"].as_str().map(str::to_owned))
}

/// The SidecarSet's ControllerRevisions (label `kruise.io/sidecarset-name`, in the manager's
/// namespace), oldest first.
fn revisions(k: &crate::common::Kubectl, name: &str) -> Vec<Value> {
    let selector = format!("kruise.io/sidecarset-name={name}");
    let list = k.json(&[
        "get",
        "controllerrevisions",
        "-n",
        "kruise-system",
        "-l",
        &selector,
        "-o",
        "json",
    ]);
    let mut items = list["items"].as_array().cloned().unwrap_or_default();
    items.sort_by_key(|r| r["revision"].as_i64());
    items
}

fn latest_revision(k: &crate::common::Kubectl, name: &str) -> String {
    k.json(&["get", "sidecarset", name, "-o", "json"])["status"]["latestRevision"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Each version of a SidecarSet is kept as a ControllerRevision that `status.latestRevision`
/// names, and `injectionStrategy.revision` (by name or custom version) injects an older one.
#[test]
fn controller_revisions_record_each_version_and_pin_injection() {
    let cluster = crate::pub_budget::cluster();
    let k = &cluster.kubectl;
    let (_manager, _) = crate::pub_budget::start_manager(&cluster, &[]);
    let v1 = "registry.example/log-agent:v1";
    let v2 = "registry.example/log-agent:v2";
    let yaml = format!(
        "{}  customVersion: v1\n",
        sidecarset("apps.kruise.io/v1beta1", "pinned-agent", "pinned", "log-agent", "")
    );
    k.ok_stdin(&["apply", "-f", "-"], &yaml);

    // The first revision: named by the status, labelled, owned, recording the v1 container.
    let first = wait_for("the first revision", Duration::from_secs(30), || {
        let latest = latest_revision(k, "pinned-agent");
        let revs = revisions(k, "pinned-agent");
        (!latest.is_empty() && revs.len() == 1 && revs[0]["metadata"]["name"] == latest.as_str())
            .then(|| revs[0].clone())
    });
    let first_name = first["metadata"]["name"].as_str().expect("name").to_owned();
    assert!(first_name.starts_with("pinned-agent-"), "{first_name}");
    assert_eq!(first["revision"], 1, "{first}");
    assert_eq!(first["metadata"]["labels"]["apps.kruise.io/sidecarset-custom-version"], "v1");
    let owner = &first["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["name"].as_str()),
        (Some("SidecarSet"), Some("pinned-agent")),
        "{first}"
    );
    assert_eq!(owner["controller"], true, "{first}");
    assert_eq!(first["data"]["spec"]["containers"][0]["image"], v1, "{first}");
    assert!(first["metadata"]["annotations"]["kruise.io/sidecarset-hash"].is_string(), "{first}");

    // A new image: a second revision, which becomes the latest.
    k.ok(&["patch", "sidecarset", "pinned-agent", "--type=json", "-p",
        &format!(r#"[{{"op": "replace", "path": "/spec/containers/0/image", "value": "{v2}"}}, {{"op": "replace", "path": "/spec/customVersion", "value": "v2"}}]"#)]);
    let second = wait_for("the second revision", Duration::from_secs(30), || {
        let latest = latest_revision(k, "pinned-agent");
        let revs = revisions(k, "pinned-agent");
        (revs.len() == 2 && latest != first_name && revs[1]["metadata"]["name"] == latest.as_str())
            .then(|| revs[1].clone())
    });
    assert_eq!(second["revision"], 2, "{second}");
    assert_eq!(second["data"]["spec"]["containers"][0]["image"], v2, "{second}");
    assert_eq!(second["metadata"]["labels"]["apps.kruise.io/sidecarset-custom-version"], "v2");
    wait_for("v2 injected", Duration::from_secs(30), || {
        (injected_image(k, "pinned", "log-agent").as_deref() == Some(v2)).then_some(())
    });

    // Pinned to the first revision by name: new pods get v1 (admission checks it exists).
    let pin = format!(
        r#"{{"spec": {{"updateStrategy": {{"paused": true}}, "injectionStrategy": {{"revision": {{"revisionName": "{first_name}"}}}}}}}}"#
    );
    k.ok(&["patch", "sidecarset", "pinned-agent", "--type=merge", "-p", &pin]);
    wait_for("v1 injected again", Duration::from_secs(30), || {
        (injected_image(k, "pinned", "log-agent").as_deref() == Some(v1)).then_some(())
    });
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pinned-0\n  labels: {app: pinned}\nspec:\n  containers:\n  - name: main\n    image: nginx:1\n";
    k.ok_stdin(&["create", "-f", "-"], pod);
    let created = k.json(&["get", "pod", "pinned-0", "-o", "json"]);
    let sidecar = created["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "log-agent").cloned())
        .expect("the sidecar");
    assert_eq!(sidecar["image"], v1, "{created}");
    let hashes: Value = serde_json::from_str(
        created["metadata"]["annotations"]["kruise.io/sidecarset-hash"].as_str().expect("hash"),
    )
    .expect("json");
    assert_eq!(hashes["pinned-agent"]["controllerRevision"], first_name.as_str(), "{hashes}");
    // A revision that does not exist is refused.
    let out = k.run_with(
        &["patch", "sidecarset", "pinned-agent", "--type=merge", "-p",
          r#"{"spec": {"injectionStrategy": {"revision": {"revisionName": "pinned-agent-nope"}}}}"#],
        None,
    );
    assert!(!out.ok && out.stderr.contains("pinned-agent-nope"), "{}", out.stderr);

    // Pinned by custom version: the revision labelled with it.
    k.ok(&["patch", "sidecarset", "pinned-agent", "--type=merge", "-p",
        r#"{"spec": {"injectionStrategy": {"revision": {"revisionName": null, "customVersion": "v2"}}}}"#]);
    wait_for("v2 pinned by custom version", Duration::from_secs(30), || {
        (injected_image(k, "pinned", "log-agent").as_deref() == Some(v2)).then_some(())
    });
    k.ok(&[
        "patch",
        "sidecarset",
        "pinned-agent",
        "--type=merge",
        "-p",
        r#"{"spec": {"injectionStrategy": {"revision": {"customVersion": "v1"}}}}"#,
    ]);
    wait_for("v1 pinned by custom version", Duration::from_secs(30), || {
        (injected_image(k, "pinned", "log-agent").as_deref() == Some(v1)).then_some(())
    });
    // Neither pin change nor pause made a new revision.
    assert_eq!(revisions(k, "pinned-agent").len(), 2);
    assert_eq!(
        latest_revision(k, "pinned-agent"),
        second["metadata"]["name"].as_str().unwrap_or_default()
    );
}

/// Beyond upstream (openkruise#1272, #928): a change of a sidecar's resources is rolled out in
/// place through the pods' `resize` subresource (gate `InPlacePodVerticalScaling`): the pods
/// are kept, nothing restarts, and their container statuses report the new resources.
#[test]
fn a_sidecar_resources_change_is_resized_in_place() {
    let pg = Playground::start(1, &["--feature-gates", "InPlacePodVerticalScaling=true"]);
    let k = &pg.kubectl;
    let resources = "    resources:\n      requests: {cpu: 100m, memory: 32Mi}\n      limits: {cpu: 200m, memory: 64Mi}\n";
    let before = web_with_log_agent(k, resources, 2);
    assert_eq!(before.len(), 2);
    let sidecar = |p: &Value, part: &str| {
        p[part]["containers"]
            .as_array()
            .or_else(|| p[part]["containerStatuses"].as_array())
            .and_then(|cs| cs.iter().find(|c| c["name"] == "log-agent").cloned())
            .unwrap_or(Value::Null)
    };
    let first = &pods(k, "app=web")[0];
    assert_eq!(sidecar(first, "spec")["resources"]["requests"]["cpu"], "100m", "{first}");

    k.ok(&["patch", "sidecarset", "log-agent", "--type=json", "-p",
        r#"[{"op": "replace", "path": "/spec/containers/0/resources", "value": {"requests": {"cpu": "150m", "memory": "32Mi"}, "limits": {"cpu": "300m", "memory": "64Mi"}}}]"#]);
    let resized = wait_for("both sidecars resized", Duration::from_secs(60), || {
        // Mid-rollout the status never counts more updated-and-ready pods than updated ones
        // (a count gone down is written, not left from the last rollout).
        let st = k.json(&["get", "sidecarset", "log-agent", "-o", "json"])["status"].clone();
        let count = |f: &str| st[f].as_i64().unwrap_or(0);
        assert!(count("updatedReadyPods") <= count("updatedPods"), "{st}");
        let now = pods(k, "app=web");
        (now.len() == 2
            && now.iter().all(|p| {
                let spec = sidecar(p, "spec");
                let status = sidecar(p, "status");
                spec["resources"]["requests"]["cpu"] == "150m"
                    && spec["resources"]["limits"]["cpu"] == "300m"
                    && status["resources"]["requests"]["cpu"] == "150m"
            }))
        .then_some(now)
    });
    for pod in &resized {
        assert!(before.contains(&pod["metadata"]["uid"]), "no pod was replaced: {pod}");
        for status in pod["status"]["containerStatuses"].as_array().into_iter().flatten() {
            assert_eq!(status["restartCount"], 0, "{status}");
        }
    }
    wait_for("the status", Duration::from_secs(30), || {
        let st = k.json(&["get", "sidecarset", "log-agent", "-o", "json"])["status"].clone();
        (st["updatedPods"] == 2 && st["updatedReadyPods"] == 2).then_some(())
    });
}
