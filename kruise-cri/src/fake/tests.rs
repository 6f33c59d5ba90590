#![allow(clippy::unwrap_used)]

use super::*;

fn pod(rt: &FakeRuntime, name: &str) -> String {
    rt.run_pod_sandbox(PodSandboxConfig {
        name: name.into(),
        uid: format!("uid-{name}"),
        namespace: "default".into(),
        ..PodSandboxConfig::default()
    })
}

fn container(rt: &FakeRuntime, pod: &str, name: &str) -> String {
    rt.add_image("busybox", 10);
    let id = rt
        .create_container(
            pod,
            ContainerConfig {
                name: name.into(),
                image: "busybox".into(),
                labels: [("app".to_string(), name.to_string())].into(),
                ..ContainerConfig::default()
            },
        )
        .unwrap();
    rt.start_container(&id).unwrap();
    id
}

#[test]
fn normalize_adds_latest_only_without_tag_or_digest() {
    assert_eq!(normalize_image("busybox"), "busybox:latest");
    assert_eq!(normalize_image("busybox:1"), "busybox:1");
    assert_eq!(
        normalize_image("127.0.0.1:5000/test/busybox"),
        "127.0.0.1:5000/test/busybox:latest"
    );
    assert_eq!(normalize_image("127.0.0.1:5000/busybox:1"), "127.0.0.1:5000/busybox:1");
    assert_eq!(normalize_image("a/b@sha256:00"), "a/b@sha256:00");
}

#[test]
fn ids_are_deterministic_per_name_and_differ_across_names() {
    let a = FakeRuntime::new("node-a");
    let a2 = FakeRuntime::new("node-a");
    let b = FakeRuntime::new("node-b");
    let (pa, pa2, pb) = (pod(&a, "p"), pod(&a2, "p"), pod(&b, "p"));
    assert_eq!(pa, pa2);
    assert_ne!(pa, pb);
    assert_eq!(pa.len(), 64);
    assert!(pa.chars().all(|c| c.is_ascii_hexdigit()));
}

#[tokio::test]
async fn pull_failures_count_down_then_succeed() {
    let rt = FakeRuntime::new("n");
    rt.fail_pulls("img:1", Some(2), "boom");
    for _ in 0..2 {
        let err = rt.pull_image("img:1", None, None).await.unwrap_err();
        match &err {
            CriError::PullImage { image, message, .. } => {
                assert_eq!(image, "img:1");
                assert_eq!(message, "boom");
            }
            other => panic!("{other:?}"),
        }
    }
    let id = rt.pull_image("img:1", None, None).await.unwrap();
    assert!(id.starts_with("sha256:"));
    assert_eq!(rt.pull_count("img:1"), 3);
    assert_eq!(rt.image_status("img:1").await.unwrap().unwrap().id, id);
    assert_eq!(rt.image_status(&id).await.unwrap().unwrap().id, id);
    assert!(rt.image_status("img:2").await.unwrap().is_none());
}

#[tokio::test]
async fn auth_is_checked_per_registry() {
    let rt = FakeRuntime::new("n");
    rt.require_auth("reg.example:5000", AuthConfig::basic("u", "p"));
    let err = rt
        .pull_image("reg.example:5000/a:1", Some(AuthConfig::basic("u", "wrong")), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthenticated);
    rt.pull_image("reg.example:5000/a:1", Some(AuthConfig::basic("u", "p")), None).await.unwrap();
    // Another registry needs nothing.
    rt.pull_image("other.example/a:1", None, None).await.unwrap();
    let pulls = rt.pulls();
    assert_eq!(pulls.len(), 3);
    assert!(!pulls[0].succeeded && pulls[1].succeeded);
    assert_eq!(pulls[1].username.as_deref(), Some("u"));
}

#[tokio::test(start_paused = true)]
async fn pull_delay_applies() {
    let rt = FakeRuntime::new("n");
    rt.set_pull_delay(Some("slow:1"), Duration::from_secs(30));
    let start = tokio::time::Instant::now();
    rt.pull_image("slow:1", None, None).await.unwrap();
    assert!(start.elapsed() >= Duration::from_secs(30));
    let start = tokio::time::Instant::now();
    rt.pull_image("fast:1", None, None).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn stop_then_restart_increments_attempt() {
    let rt = FakeRuntime::new("n");
    let p = pod(&rt, "p");
    let c = container(&rt, &p, "main");
    let mut events = rt.subscribe();
    rt.stop_container(&c, 30).await.unwrap();
    let st = rt.container_status(&c).await.unwrap();
    assert_eq!(st.state, ContainerState::Exited);
    assert_eq!(st.exit_code, STOP_EXIT_CODE);
    assert!(st.finished_at >= st.started_at);
    assert_eq!(rt.last_stop_timeout(&c), Some(30));
    assert_eq!(
        events.recv().await.unwrap(),
        FakeEvent::ContainerExited { id: c.clone(), timeout_secs: Some(30) }
    );
    // Stopping again is fine.
    rt.stop_container(&c, 0).await.unwrap();
    let c2 = rt.restart_container(&c).unwrap();
    let st2 = rt.container_status(&c2).await.unwrap();
    assert_eq!((st2.name.as_str(), st2.attempt, st2.state), ("main", 1, ContainerState::Running));
    // Restarting a running container is refused.
    assert_eq!(rt.restart_container(&c2).unwrap_err().kind(), ErrorKind::FailedPrecondition);
    let running = rt
        .list_containers(&ContainerFilter {
            state: Some(ContainerState::Running),
            ..ContainerFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].id, c2);
}

#[tokio::test]
async fn auto_restart_replaces_a_stopped_container() {
    let rt = FakeRuntime::new("n");
    rt.set_auto_restart(true);
    let p = pod(&rt, "p");
    let c = container(&rt, &p, "main");
    rt.stop_container(&c, 0).await.unwrap();
    assert_eq!(rt.container_status(&c).await.unwrap().exit_code, KILL_EXIT_CODE);
    let all = rt.list_containers(&ContainerFilter::pod_sandbox(&p)).await.unwrap();
    assert_eq!(all.len(), 2);
    let new = all.iter().find(|x| x.id != c).unwrap();
    assert_eq!((new.attempt, new.state), (1, ContainerState::Running));
}

#[tokio::test]
async fn list_filters_by_sandbox_and_labels() {
    let rt = FakeRuntime::new("n");
    let p1 = pod(&rt, "p1");
    let p2 = pod(&rt, "p2");
    let a = container(&rt, &p1, "a");
    let _b = container(&rt, &p1, "b");
    let _c = container(&rt, &p2, "a");
    let in_p1 = rt.list_containers(&ContainerFilter::pod_sandbox(&p1)).await.unwrap();
    assert_eq!(in_p1.len(), 2);
    let sel = ContainerFilter::pod_sandbox(&p1).label("app", "a");
    let got = rt.list_containers(&sel).await.unwrap();
    assert_eq!(got.iter().map(|c| c.id.clone()).collect::<Vec<_>>(), vec![a]);
    let all_a = rt.list_containers(&ContainerFilter::default().label("app", "a")).await.unwrap();
    assert_eq!(all_a.len(), 2);
    // Stopping the sandbox exits its containers.
    rt.stop_pod_sandbox(&p1).unwrap();
    let exited = rt
        .list_containers(&ContainerFilter {
            state: Some(ContainerState::Exited),
            ..ContainerFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(exited.len(), 2);
    rt.remove_pod_sandbox(&p1);
    assert_eq!(rt.list_containers(&ContainerFilter::default()).await.unwrap().len(), 1);
}

#[tokio::test]
async fn exec_default_and_custom_handler() {
    let rt = FakeRuntime::new("n");
    let p = pod(&rt, "p");
    let c = container(&rt, &p, "main");
    let cmd = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let r = rt.exec_sync(&c, cmd(&["echo", "hi", "there"]), Duration::ZERO).await.unwrap();
    assert_eq!((r.stdout.as_slice(), r.exit_code), (&b"hi there\n"[..], 0));
    let r = rt.exec_sync(&c, cmd(&["sh", "-c", "exit 3"]), Duration::ZERO).await.unwrap();
    assert_eq!(r.exit_code, 3);
    let r = rt.exec_sync(&c, cmd(&["nope"]), Duration::ZERO).await.unwrap();
    assert_eq!(r.exit_code, 127);
    rt.set_exec_handler(|st, cmd| ExecSyncResult {
        stdout: format!("{}:{}", st.name, cmd.len()).into_bytes(),
        ..ExecSyncResult::default()
    });
    let r = rt.exec_sync(&c, cmd(&["x", "y"]), Duration::ZERO).await.unwrap();
    assert_eq!(r.stdout, b"main:2");
    rt.stop_container(&c, 1).await.unwrap();
    let err = rt.exec_sync(&c, cmd(&["true"]), Duration::ZERO).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
}

#[tokio::test]
async fn missing_objects_are_not_found() {
    let rt = FakeRuntime::new("n");
    assert!(rt.container_status("x").await.unwrap_err().is_not_found());
    assert!(rt.stop_container("x", 1).await.unwrap_err().is_not_found());
    let p = pod(&rt, "p");
    let err = rt
        .create_container(
            &p,
            ContainerConfig {
                name: "c".into(),
                image: "never-pulled:1".into(),
                ..ContainerConfig::default()
            },
        )
        .unwrap_err();
    assert!(matches!(err, CriError::NotFound { what: "image", .. }), "{err:?}");
}

#[test]
fn usable_as_a_trait_object_and_cheap_to_clone() {
    let rt = FakeRuntime::new("n");
    let shared: Arc<dyn ContainerRuntime> = Arc::new(rt.clone());
    drop(shared);
    let many: Vec<FakeRuntime> = (0..500).map(|i| FakeRuntime::new(format!("node-{i}"))).collect();
    assert_eq!(many.len(), 500);
    // Clones share state.
    let c = rt.clone();
    pod(&c, "p");
    assert_eq!(rt.list_pod_sandboxes().len(), 1);
}
