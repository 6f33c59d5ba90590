//! The workers in process over `FakeRuntime` and the sim API server.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod, Secret};
use kruise_api::apps::v1beta1::{
    ContainerRecreateRequest, ContainerRecreateRequestPhase, NodeImage,
};
use kruise_cri::fake::FakeEvent;
use kruise_cri::types::{ContainerConfig, PodSandboxConfig};
use kruise_cri::{AuthConfig, ContainerRuntime, ContainerState, FakeRuntime};
use kruise_kube::daemon::{Daemon, DaemonConfig};
use kruise_kube::health::Health;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

use crate::common::*;

/// A sandbox for pod `uid` with these containers, running; returns their IDs.
pub fn run_pod(
    fake: &FakeRuntime,
    name: &str,
    uid: &str,
    image: &str,
    containers: &[&str],
) -> Vec<String> {
    let labels = |c: Option<&str>| {
        let mut l: kruise_cri::types::StringMap =
            [("io.kubernetes.pod.uid".to_owned(), uid.to_owned())].into();
        if let Some(c) = c {
            l.insert("io.kubernetes.container.name".to_owned(), c.to_owned());
        }
        l
    };
    let sandbox = fake.run_pod_sandbox(PodSandboxConfig {
        name: name.into(),
        uid: uid.into(),
        namespace: "default".into(),
        labels: labels(None),
        ..Default::default()
    });
    containers
        .iter()
        .map(|c| {
            let id = fake
                .create_container(
                    &sandbox,
                    ContainerConfig {
                        name: (*c).into(),
                        image: image.into(),
                        labels: labels(Some(c)),
                        annotations: [("io.kubernetes.container.hash".to_owned(), "1f".to_owned())]
                            .into(),
                        ..Default::default()
                    },
                )
                .unwrap();
            fake.start_container(&id).unwrap();
            id
        })
        .collect()
}

fn start_daemon(client: &kube::Client, fake: &FakeRuntime) -> tokio::sync::oneshot::Sender<()> {
    start_daemon_with(client, fake, DaemonConfig::new(NODE))
}

fn start_daemon_with(
    client: &kube::Client,
    fake: &FakeRuntime,
    mut config: DaemonConfig,
) -> tokio::sync::oneshot::Sender<()> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let runtime: Arc<dyn ContainerRuntime> = Arc::new(fake.clone());
    config.pull_limits.max_workers = Some(2);
    let daemon = Daemon::new(client.clone(), runtime, config);
    tokio::spawn(daemon.run(Health::new(), async move {
        let _ = rx.await;
    }));
    tx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crr_stops_one_container_once_and_completes_and_meta_is_reported() {
    let (_server, client) = sim().await;
    let fake = FakeRuntime::new("node-a");
    fake.add_image("busybox:1", 1000);
    fake.set_auto_restart(true);
    let mut events = fake.subscribe();

    // The pod object first (for its UID), then its containers in the runtime.
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let placeholder =
        create_pod(&client, "web-0", "busybox:1", &[("app", "x"), ("sidecar", "y")]).await;
    let uid = placeholder.metadata.uid.clone().unwrap();
    let ids = run_pod(&fake, "web-0", &uid, "busybox:1", &["app", "sidecar"]);
    set_statuses(&client, "web-0", &[("app", &ids[0]), ("sidecar", &ids[1])]).await;
    let pod = pods.get("web-0").await.unwrap();

    let _stop = start_daemon(&client, &fake);

    // containermeta: both containers reported with their IDs and the kubelet hash.
    let meta = wait_for("the runtime-containers-meta annotation", Duration::from_secs(20), || {
        let pods = pods.clone();
        async move {
            let p = pods.get("web-0").await.ok()?;
            p.metadata.annotations?.get("apps.kruise.io/runtime-containers-meta").cloned()
        }
    })
    .await;
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(meta["containers"][0]["containerID"], format!("containerd://{}", ids[0]));
    assert_eq!(meta["containers"][1]["containerID"], format!("containerd://{}", ids[1]));
    assert_eq!(meta["containers"][0]["hashes"]["plainHash"], 31);

    let t = std::time::Instant::now();
    create_crr(&client, "recreate-app", &pod, "app", &ids[0]).await;
    let crrs = Api::<ContainerRecreateRequest>::namespaced(client.clone(), "default");

    // The daemon stops the app container (the fake restarts it as a kubelet would).
    let new_id = wait_for("the app container restarted", Duration::from_secs(20), || {
        let fake = fake.clone();
        let old = ids[0].clone();
        async move {
            let listed = fake.list_containers(&Default::default()).await.ok()?;
            let st = fake.container_status(&old).await.ok()?;
            (st.state == ContainerState::Exited).then_some(())?;
            listed
                .into_iter()
                .find(|c| c.name == "app" && c.id != old && c.state == ContainerState::Running)
                .map(|c| c.id)
        }
    })
    .await;
    eprintln!("container stopped {:?} after the request", t.elapsed());
    // The request's grace period is 1 s; a stop never gets less than the kubelet's 2 s.
    assert_eq!(fake.last_stop_timeout(&ids[0]), Some(2), "stopped with the grace period");
    let crr = crrs.get("recreate-app").await.unwrap();
    let states = &crr.status.as_ref().unwrap().container_recreate_states;
    assert_eq!(states.len(), 1);
    assert!(states[0].is_killed, "{states:?}");
    assert_eq!(crr.status.as_ref().unwrap().phase, ContainerRecreateRequestPhase::Recreating);

    // The kubelet reports the new instance ready: the request succeeds and completes.
    set_statuses(&client, "web-0", &[("app", &new_id), ("sidecar", &ids[1])]).await;
    let done = wait_for("the request completed", Duration::from_secs(20), || {
        let crrs = crrs.clone();
        async move {
            let c = crrs.get("recreate-app").await.ok()?;
            c.status.as_ref()?.completion_time.is_some().then_some(c)
        }
    })
    .await;
    eprintln!("request completed {:?} after creation", t.elapsed());
    let status = done.status.unwrap();
    assert_eq!(status.phase, ContainerRecreateRequestPhase::Completed);
    assert_eq!(status.container_recreate_states[0].phase, ContainerRecreateRequestPhase::Succeeded);

    // Exactly one stop of app; the sidecar untouched.
    let mut app_exits = 0;
    while let Ok(e) = events.try_recv() {
        match e {
            FakeEvent::ContainerExited { id, .. } if id == ids[0] => app_exits += 1,
            FakeEvent::ContainerExited { id, .. } => panic!("unexpected stop of {id}"),
            _ => {}
        }
    }
    assert_eq!(app_exits, 1);
    assert_eq!(fake.container_status(&ids[1]).await.unwrap().state, ContainerState::Running);
    assert_eq!(fake.last_stop_timeout(&ids[1]), None);

    // containermeta follows the new app container.
    wait_for("the meta of the new container", Duration::from_secs(20), || {
        let pods = pods.clone();
        let new_id = new_id.clone();
        async move {
            let p = pods.get("web-0").await.ok()?;
            let m =
                p.metadata.annotations?.get("apps.kruise.io/runtime-containers-meta").cloned()?;
            m.contains(&new_id).then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crrs_of_one_pod_run_one_at_a_time() {
    let (_server, client) = sim().await;
    let fake = FakeRuntime::new("node-a");
    fake.add_image("busybox:1", 1000);
    let placeholder = create_pod(&client, "web-1", "busybox:1", &[("a", "x"), ("b", "y")]).await;
    let uid = placeholder.metadata.uid.clone().unwrap();
    let ids = run_pod(&fake, "web-1", &uid, "busybox:1", &["a", "b"]);
    set_statuses(&client, "web-1", &[("a", &ids[0]), ("b", &ids[1])]).await;
    let pod = Api::<Pod>::namespaced(client.clone(), "default").get("web-1").await.unwrap();
    create_crr(&client, "first", &pod, "a", &ids[0]).await;
    tokio::time::sleep(Duration::from_millis(1100)).await; // a later creationTimestamp
    create_crr(&client, "second", &pod, "b", &ids[1]).await;
    let _stop = start_daemon(&client, &fake);
    let crrs = Api::<ContainerRecreateRequest>::namespaced(client.clone(), "default");
    wait_for("the second request waiting", Duration::from_secs(20), || {
        let crrs = crrs.clone();
        async move {
            let second = crrs.get("second").await.ok()?;
            let s = second.status?;
            (s.phase == ContainerRecreateRequestPhase::Pending && s.message.contains("first"))
                .then_some(())
        }
    })
    .await;
    // No kubelet restarts a: the first stays Recreating, the second waits, b is never stopped.
    wait_for("a stopped", Duration::from_secs(20), || {
        let fake = fake.clone();
        let a = ids[0].clone();
        async move {
            (fake.container_status(&a).await.ok()?.state == ContainerState::Exited).then_some(())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(fake.container_status(&ids[1]).await.unwrap().state, ContainerState::Running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imagepuller_pulls_with_secret_credentials_and_reports_failures() {
    let (_server, client) = sim().await;
    let fake = FakeRuntime::new("node-a");
    fake.require_auth("registry.local:5000", AuthConfig::basic("kruise", "s3cret"));
    fake.fail_pulls("registry.local:5000/team/bad:1", None, "manifest unknown");
    let auth = "a3J1aXNlOnMzY3JldA=="; // kruise:s3cret
    let config = json!({"auths": {"registry.local:5000": {"auth": auth}}}).to_string();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "regcred-abc123", "namespace": CONFIG_NS},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": config},
    }))
    .unwrap();
    Api::<Secret>::namespaced(client.clone(), CONFIG_NS)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let ni: NodeImage = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage",
        "metadata": {"name": NODE},
        "spec": {"images": {
            "registry.local:5000/team/app": {
                "pullSecrets": [{"namespace": CONFIG_NS, "name": "regcred-abc123"}],
                "tags": [{"tag": "1", "version": 1}, {"tag": "2", "version": 1}],
            },
            "registry.local:5000/team/bad": {
                "tags": [{"tag": "1", "version": 1, "pullPolicy": {"backoffLimit": 1, "timeoutSeconds": 10}}],
            },
        }},
    }))
    .unwrap();
    let nis = Api::<NodeImage>::all(client.clone());
    nis.create(&PostParams::default(), &ni).await.unwrap();
    let t = std::time::Instant::now();
    let _stop = start_daemon(&client, &fake);
    let status = wait_for("the NodeImage status", Duration::from_secs(30), || {
        let nis = nis.clone();
        async move {
            let s = nis.get(NODE).await.ok()?.status?;
            (s.succeeded == 2 && s.failed == 1).then_some(s)
        }
    })
    .await;
    eprintln!("NodeImage: 2 pulled, 1 failed after 2 attempts, in {:?}", t.elapsed());
    assert_eq!(status.desired, 3);
    let bad = &status.image_statuses["registry.local:5000/team/bad"].tags[0];
    assert!(bad.message.contains("manifest unknown"), "{bad:?}");
    assert_eq!(fake.pull_count("registry.local:5000/team/bad:1"), 2, "one try and one retry");
    let app = &status.image_statuses["registry.local:5000/team/app"].tags[0];
    assert!(app.image_id.starts_with("sha256:"), "{app:?}");
    let pulls = fake.pulls();
    let authed =
        pulls.iter().find(|p| p.image == "registry.local:5000/team/app:1" && p.succeeded).unwrap();
    assert_eq!(authed.username.as_deref(), Some("kruise"));

    let events = wait_for("the imagepuller's Events", Duration::from_secs(10), || {
        let client = client.clone();
        async move {
            let list = Api::<Event>::all(client).list(&ListParams::default()).await.ok()?;
            let ours: Vec<Event> = list
                .items
                .into_iter()
                .filter(|e| {
                    e.reporting_component.as_deref() == Some("kruise-daemon-imagepuller")
                        || e.source.as_ref().and_then(|s| s.component.as_deref())
                            == Some("kruise-daemon-imagepuller")
                })
                .collect();
            (ours.iter().any(|e| e.reason.as_deref() == Some("PullImageSucceed"))
                && ours.iter().any(|e| e.reason.as_deref() == Some("PullImageFailed")))
            .then_some(ours)
        }
    })
    .await;
    assert!(!events.is_empty());

    // A tag removed from the spec disappears from the status.
    nis.patch(
        NODE,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(
            json!({"spec": {"images": {"registry.local:5000/team/bad": null}}}),
        ),
    )
    .await
    .unwrap();
    wait_for("the removed image gone from the status", Duration::from_secs(20), || {
        let nis = nis.clone();
        async move {
            let s = nis.get(NODE).await.ok()?.status?;
            (!s.image_statuses.contains_key("registry.local:5000/team/bad") && s.desired == 2)
                .then_some(())
        }
    })
    .await;
}

/// An exec the fake runtime ran: container ID, command, its state then, its last stop's grace.
type ExecSeen = (String, Vec<String>, ContainerState, Option<i64>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crr_runs_the_pre_stop_hook_before_the_stop_and_a_failed_hook_does_not_block_it() {
    let (_server, client) = sim().await;
    let fake = FakeRuntime::new("node-a");
    fake.add_image("busybox:1", 1000);
    fake.set_auto_restart(true);
    // The exec handler records each command with what the runtime said of the container then.
    let execs: Arc<std::sync::Mutex<Vec<ExecSeen>>> = Arc::default();
    {
        let execs = execs.clone();
        let rt = fake.clone();
        fake.set_exec_handler(move |status, cmd| {
            let stopped = rt.last_stop_timeout(&status.id);
            execs.lock().unwrap().push((status.id.clone(), cmd.to_vec(), status.state, stopped));
            kruise_cri::types::ExecSyncResult::default()
        });
    }
    let placeholder =
        create_pod(&client, "web-2", "busybox:1", &[("app", "x"), ("web", "y")]).await;
    let uid = placeholder.metadata.uid.clone().unwrap();
    let ids = run_pod(&fake, "web-2", &uid, "busybox:1", &["app", "web"]);
    set_statuses(&client, "web-2", &[("app", &ids[0]), ("web", &ids[1])]).await;

    // As the webhook fills it: app has an exec hook; web an httpGet on a port it lacks.
    let crr: ContainerRecreateRequest = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "ContainerRecreateRequest",
        "metadata": {"name": "with-hooks", "namespace": "default", "labels": {
            "crr.apps.kruise.io/node-name": NODE,
            "crr.apps.kruise.io/active": "true",
            "crr.apps.kruise.io/pod-uid": uid,
        }},
        "spec": {
            "podName": "web-2",
            "containers": [
                {"name": "app",
                 "preStop": {"exec": {"command": ["/bin/sh", "-c", "sleep 0; echo bye"]}},
                 "statusContext": {"containerID": format!("containerd://{}", ids[0]), "restartCount": 0}},
                {"name": "web",
                 "preStop": {"httpGet": {"host": "127.0.0.1", "port": "metrics", "path": "/quit"}},
                 "ports": [{"name": "http", "containerPort": 8080}],
                 "statusContext": {"containerID": format!("containerd://{}", ids[1]), "restartCount": 0}},
            ],
            "strategy": {"terminationGracePeriodSeconds": 3, "failurePolicy": "Fail"},
        },
    }))
    .unwrap();
    let crrs = Api::<ContainerRecreateRequest>::namespaced(client.clone(), "default");
    crrs.create(&PostParams::default(), &crr).await.unwrap();
    let _stop = start_daemon(&client, &fake);

    // Both containers stopped (and restarted by the fake kubelet).
    let new_ids = wait_for("both containers restarted", Duration::from_secs(20), || {
        let fake = fake.clone();
        let ids = ids.clone();
        async move {
            let listed = fake.list_containers(&Default::default()).await.ok()?;
            let mut out = Vec::new();
            for (name, old) in [("app", &ids[0]), ("web", &ids[1])] {
                (fake.container_status(old).await.ok()?.state == ContainerState::Exited)
                    .then_some(())?;
                out.push(
                    listed
                        .iter()
                        .find(|c| {
                            c.name == name && &c.id != old && c.state == ContainerState::Running
                        })?
                        .id
                        .clone(),
                );
            }
            Some(out)
        }
    })
    .await;

    // The exec hook ran once, in the running app container, before any stop of it.
    let execs = execs.lock().unwrap().clone();
    assert_eq!(execs.len(), 1, "{execs:?}");
    assert_eq!(execs[0].0, ids[0]);
    assert_eq!(execs[0].1, ["/bin/sh", "-c", "sleep 0; echo bye"]);
    assert_eq!(execs[0].2, ContainerState::Running);
    assert_eq!(execs[0].3, None, "the hook ran before the stop");
    // The stop got what was left of the grace period (the hook took under a second).
    assert_eq!(fake.last_stop_timeout(&ids[0]), Some(3));
    // The failed hook did not block web's stop, and it is reported on the pod.
    assert_eq!(fake.last_stop_timeout(&ids[1]), Some(3));
    let failed = wait_for("the FailedPreStopHook Event", Duration::from_secs(10), || {
        let client = client.clone();
        async move {
            let list = Api::<Event>::all(client).list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| e.reason.as_deref() == Some("FailedPreStopHook"))
        }
    })
    .await;
    let note = failed.message.clone().unwrap_or_default();
    assert!(note.contains("HTTP lifecycle hook (/quit)") && note.contains("metrics"), "{note}");
    let regarding = failed.involved_object.clone();
    assert_eq!(regarding.kind.as_deref(), Some("Pod"));
    assert_eq!(regarding.name.as_deref(), Some("web-2"));
    assert_eq!(regarding.field_path.as_deref(), Some("spec.containers{web}"));

    // The kubelet reports the new instances ready: the request completes.
    set_statuses(&client, "web-2", &[("app", &new_ids[0]), ("web", &new_ids[1])]).await;
    let done = wait_for("the request completed", Duration::from_secs(20), || {
        let crrs = crrs.clone();
        async move {
            let c = crrs.get("with-hooks").await.ok()?;
            c.status.as_ref()?.completion_time.is_some().then_some(c)
        }
    })
    .await;
    let status = done.status.unwrap();
    assert_eq!(status.phase, ContainerRecreateRequestPhase::Completed);
    assert!(
        status
            .container_recreate_states
            .iter()
            .all(|s| s.phase == ContainerRecreateRequestPhase::Succeeded),
        "{status:?}"
    );
}

/// The node's own credentials: a credential provider plugin (a script that answers the
/// kubelet's protocol) for one registry, run once for two tags (its answer is cached per
/// registry), and the docker keyring (`config.json`) for another; no pull secret at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imagepuller_pulls_with_a_credential_provider_plugin_and_the_docker_keyring() {
    use kruise_kube::daemon::keyring::NodeKeyring;
    use std::os::unix::fs::PermissionsExt as _;

    let (_server, client) = sim().await;
    let fake = FakeRuntime::new("node-a");
    fake.require_auth("plugin.local:5000", AuthConfig::basic("from-plugin", "p1"));
    fake.require_auth("keyring.local:5000", AuthConfig::basic("from-keyring", "k1"));

    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let response = json!({"apiVersion": "credentialprovider.kubelet.k8s.io/v1",
        "kind": "CredentialProviderResponse", "cacheKeyType": "Registry", "cacheDuration": "5m",
        "auth": {"plugin.local:5000": {"username": "from-plugin", "password": "p1"}}});
    let script = plugins.join("test-provider");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n# Reads the request, records it, prints the response.\ncat >> {calls}\necho >> {calls}\necho \"$TOKEN_KIND $1\" >> {calls}\nprintf '%s' '{response}'\n",
            calls = calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config_file = dir.path().join("CredentialProviderPlugin.yaml");
    std::fs::write(
        &config_file,
        "apiVersion: kubelet.config.k8s.io/v1\nkind: CredentialProviderConfig\nproviders:\n\
         - name: test-provider\n  matchImages: [\"*.local:5000\"]\n  defaultCacheDuration: 1m\n  \
         apiVersion: credentialprovider.kubelet.k8s.io/v1\n  args: [get-credentials]\n  \
         env: [{name: TOKEN_KIND, value: short-lived}]\n",
    )
    .unwrap();
    let docker = dir.path().join("docker");
    std::fs::create_dir(&docker).unwrap();
    let auth = "ZnJvbS1rZXlyaW5nOmsx"; // from-keyring:k1
    std::fs::write(
        docker.join("config.json"),
        json!({"auths": {"keyring.local:5000": {"auth": auth}}}).to_string(),
    )
    .unwrap();
    let keyring =
        NodeKeyring::with_docker_configs(&[docker]).with_plugins(&config_file, &plugins).unwrap();
    let mut config = DaemonConfig::new(NODE);
    config.keyring = Arc::new(keyring);

    let ni: NodeImage = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage",
        "metadata": {"name": NODE},
        "spec": {"images": {
            "plugin.local:5000/team/app": {"tags": [{"tag": "1", "version": 1}, {"tag": "2", "version": 1}]},
            "keyring.local:5000/team/tool": {"tags": [{"tag": "1", "version": 1}]},
        }},
    }))
    .unwrap();
    let nis = Api::<NodeImage>::all(client.clone());
    nis.create(&PostParams::default(), &ni).await.unwrap();
    let _stop = start_daemon_with(&client, &fake, config);
    let status = wait_for("three pulls", Duration::from_secs(30), || {
        let nis = nis.clone();
        async move {
            let s = nis.get(NODE).await.ok()?.status?;
            (s.succeeded == 3).then_some(s)
        }
    })
    .await;
    assert_eq!(status.failed, 0, "{status:?}");
    let first = status.first_sync_status.expect("the first sync is recorded");
    assert_eq!(first.status, Some(kruise_api::apps::v1beta1::SyncStatusPhase::Succeeded));
    let pulls = fake.pulls();
    let user = |image: &str| {
        pulls.iter().find(|p| p.image == image && p.succeeded).and_then(|p| p.username.clone())
    };
    assert_eq!(user("plugin.local:5000/team/app:1").as_deref(), Some("from-plugin"));
    assert_eq!(user("plugin.local:5000/team/app:2").as_deref(), Some("from-plugin"));
    assert_eq!(user("keyring.local:5000/team/tool:1").as_deref(), Some("from-keyring"));
    let calls = std::fs::read_to_string(&calls).unwrap();
    let requests: Vec<&str> =
        calls.lines().filter(|l| l.contains("CredentialProviderRequest")).collect();
    // keyring.local:5000 matches the plugin's pattern too; plugin.local's answer is cached
    // for its registry, so two runs in all, never a third.
    assert!(requests.len() <= 2, "{calls}");
    assert!(
        requests.iter().any(|r| r.contains("\"image\":\"plugin.local:5000/team/app:")),
        "{calls}"
    );
    assert!(calls.contains("short-lived get-credentials"), "the provider's env and args: {calls}");
}
