//! `CriClient` against the fake CRI gRPC server: every call goes over a real unix socket.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use kruise_cri::fake::{self, FakeServer, STOP_EXIT_CODE};
use kruise_cri::proto as pb;
use kruise_cri::{
    AuthConfig, ContainerFilter, ContainerRuntime, ContainerState, CriClient, CriError, ErrorKind,
    FakeRuntime, PULLING_IMAGE_BY_ANNOTATION, PullSandboxConfig,
};

struct Harness {
    rt: FakeRuntime,
    client: CriClient,
    _server: FakeServer,
    _dir: tempfile::TempDir,
}

async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let rt = FakeRuntime::new("node-1");
    let server = fake::serve(rt.clone(), dir.path().join("cri.sock")).await.unwrap();
    let client = CriClient::connect(server.path()).await.unwrap();
    Harness { rt, client, _server: server, _dir: dir }
}

/// A pod with one running container, made the kubelet's way: over gRPC.
async fn running_container(h: &Harness, pod: &str, name: &str) -> (String, String) {
    h.client.pull_image("busybox:1", None, None).await.unwrap();
    let mut rs = h.client.runtime_client();
    let sandbox_config = pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: pod.into(),
            uid: format!("{pod}-uid"),
            namespace: "default".into(),
            attempt: 0,
        }),
        labels: [("io.kubernetes.pod.name".to_string(), pod.to_string())].into(),
        ..Default::default()
    };
    let sandbox = rs
        .run_pod_sandbox(pb::RunPodSandboxRequest {
            config: Some(sandbox_config.clone()),
            runtime_handler: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .pod_sandbox_id;
    let id = rs
        .create_container(pb::CreateContainerRequest {
            pod_sandbox_id: sandbox.clone(),
            config: Some(pb::ContainerConfig {
                metadata: Some(pb::ContainerMetadata { name: name.into(), attempt: 0 }),
                image: Some(pb::ImageSpec { image: "busybox:1".into(), ..Default::default() }),
                command: vec!["sleep".into(), "3600".into()],
                labels: [("io.kubernetes.container.name".to_string(), name.to_string())].into(),
                ..Default::default()
            }),
            sandbox_config: Some(sandbox_config),
        })
        .await
        .unwrap()
        .into_inner()
        .container_id;
    rs.start_container(pb::StartContainerRequest { container_id: id.clone() }).await.unwrap();
    (sandbox, id)
}

#[tokio::test]
async fn version_round_trips() {
    let h = harness().await;
    let v = h.client.version().await.unwrap();
    assert_eq!(v.runtime_name, "fake");
    assert_eq!(v.runtime_api_version, "v1");
    h.rt.set_version(kruise_cri::VersionInfo { runtime_name: "other".into(), ..v });
    assert_eq!(h.client.version().await.unwrap().runtime_name, "other");
}

#[tokio::test]
async fn pull_passes_auth_and_sandbox_config_and_lists_images() {
    let h = harness().await;
    h.rt.require_auth("reg.local:5000", AuthConfig::basic("alice", "s3cret"));
    let sandbox = PullSandboxConfig {
        labels: [("l".to_string(), "v".to_string())].into(),
        annotations: Default::default(),
    };
    let image_ref = h
        .client
        .pull_image(
            "reg.local:5000/app:1",
            Some(AuthConfig::basic("alice", "s3cret")),
            Some(sandbox),
        )
        .await
        .unwrap();
    assert!(image_ref.starts_with("sha256:"), "{image_ref}");
    let pulls = h.rt.pulls();
    assert_eq!(pulls.len(), 1);
    assert_eq!(pulls[0].username.as_deref(), Some("alice"));
    let sent = pulls[0].sandbox.clone().unwrap();
    assert_eq!(sent.labels.get("l").map(String::as_str), Some("v"));
    // Upstream's annotation is always there.
    assert_eq!(
        sent.annotations.get(PULLING_IMAGE_BY_ANNOTATION).map(String::as_str),
        Some("kruise-daemon")
    );

    // Wrong credentials: a typed pull error naming the image, with the class of failure.
    let err = h
        .client
        .pull_image("reg.local:5000/app:2", Some(AuthConfig::basic("alice", "nope")), None)
        .await
        .unwrap_err();
    match &err {
        CriError::PullImage { image, kind, .. } => {
            assert_eq!(image, "reg.local:5000/app:2");
            assert_eq!(*kind, ErrorKind::Unauthenticated);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("reg.local:5000/app:2"), "{err}");

    h.client.pull_image("busybox", None, None).await.unwrap();
    let all = h.client.list_images(None).await.unwrap();
    let mut tags: Vec<_> = all.iter().flat_map(|i| i.repo_tags.clone()).collect();
    tags.sort();
    assert_eq!(tags, vec!["busybox:latest", "reg.local:5000/app:1"]);
    let one = h.client.list_images(Some("busybox:latest")).await.unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].size, fake::DEFAULT_IMAGE_SIZE);

    let status = h.client.image_status("reg.local:5000/app:1").await.unwrap().unwrap();
    assert_eq!(status.id, image_ref);
    assert!(h.client.image_status("reg.local:5000/app:2").await.unwrap().is_none());
}

#[tokio::test]
async fn injected_pull_failure_surfaces_as_a_typed_error_naming_the_image() {
    let h = harness().await;
    h.rt.fail_pulls("flaky:1", Some(1), "registry said 503");
    let err = h.client.pull_image("flaky:1", None, None).await.unwrap_err();
    match &err {
        CriError::PullImage { image, message, kind } => {
            assert_eq!(image, "flaky:1");
            assert_eq!(message, "registry said 503");
            assert_eq!(*kind, ErrorKind::Unknown);
        }
        other => panic!("{other:?}"),
    }
    // The next one succeeds.
    h.client.pull_image("flaky:1", None, None).await.unwrap();
    assert_eq!(h.rt.pull_count("flaky:1"), 2);
}

#[tokio::test]
async fn list_and_status_of_containers() {
    let h = harness().await;
    let (pod_a, a) = running_container(&h, "a", "main").await;
    let (_pod_b, b) = running_container(&h, "b", "main").await;

    let all = h.client.list_containers(&ContainerFilter::default()).await.unwrap();
    let mut ids: Vec<_> = all.iter().map(|c| c.id.clone()).collect();
    let mut expected = vec![a.clone(), b.clone()];
    expected.sort();
    ids.sort();
    assert_eq!(ids, expected);

    let in_a = h.client.list_containers(&ContainerFilter::pod_sandbox(&pod_a)).await.unwrap();
    assert_eq!(in_a.len(), 1);
    let c = &in_a[0];
    assert_eq!((c.id.as_str(), c.name.as_str(), c.attempt), (a.as_str(), "main", 0));
    assert_eq!((c.state, c.image.as_str()), (ContainerState::Running, "busybox:1"));
    assert_eq!(c.pod_sandbox_id, pod_a);

    let by_label = h
        .client
        .list_containers(&ContainerFilter::default().label("io.kubernetes.container.name", "main"))
        .await
        .unwrap();
    assert_eq!(by_label.len(), 2);
    let none = h
        .client
        .list_containers(&ContainerFilter::default().label("io.kubernetes.container.name", "x"))
        .await
        .unwrap();
    assert!(none.is_empty());

    let st = h.client.container_status(&a).await.unwrap();
    assert_eq!(st.id, a);
    assert_eq!(st.state, ContainerState::Running);
    assert!(st.started_at > 0);
    assert_eq!(st.labels.get("io.kubernetes.container.name").map(String::as_str), Some("main"));

    let err = h.client.container_status("missing").await.unwrap_err();
    match err {
        CriError::NotFound { what, id } => {
            assert_eq!((what, id.as_str()), ("container", "missing"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn stop_makes_status_exited_and_restart_counts() {
    let h = harness().await;
    let (pod, id) = running_container(&h, "p", "main").await;
    h.client.stop_container(&id, 15).await.unwrap();
    let st = h.client.container_status(&id).await.unwrap();
    assert_eq!(st.state, ContainerState::Exited);
    assert_eq!(st.exit_code, STOP_EXIT_CODE);
    assert!(st.finished_at > 0);
    assert_eq!(h.rt.last_stop_timeout(&id), Some(15));
    // The exited filter finds it; the running filter does not.
    let exited = h
        .client
        .list_containers(&ContainerFilter {
            state: Some(ContainerState::Exited),
            ..ContainerFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(exited.len(), 1);
    // A "kubelet" restarts it: a new container of the same name, attempt 1.
    let new_id = h.rt.restart_container(&id).unwrap();
    let list = h.client.list_containers(&ContainerFilter::pod_sandbox(&pod)).await.unwrap();
    let new = list.iter().find(|c| c.id == new_id).unwrap();
    assert_eq!((new.name.as_str(), new.attempt, new.state), ("main", 1, ContainerState::Running));
    // Stopping a missing container is NotFound.
    assert!(h.client.stop_container("missing", 0).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn exec_sync_returns_stdout_and_exit_code() {
    let h = harness().await;
    let (_, id) = running_container(&h, "p", "main").await;
    let r = h
        .client
        .exec_sync(&id, vec!["echo".into(), "hello".into()], Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(r.stdout, b"hello\n");
    assert_eq!(r.exit_code, 0);
    let r = h
        .client
        .exec_sync(&id, vec!["sh".into(), "-c".into(), "exit 7".into()], Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(r.exit_code, 7);
    h.rt.set_exec_handler(|_, _| kruise_cri::ExecSyncResult {
        stdout: vec![],
        stderr: b"oops".to_vec(),
        exit_code: 2,
    });
    let r = h.client.exec_sync(&id, vec!["anything".into()], Duration::ZERO).await.unwrap();
    assert_eq!((r.stderr.as_slice(), r.exit_code), (&b"oops"[..], 2));
    h.client.stop_container(&id, 0).await.unwrap();
    let err = h.client.exec_sync(&id, vec!["true".into()], Duration::ZERO).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition, "{err}");
}

#[tokio::test]
async fn unimplemented_rpcs_say_so_and_the_client_is_object_safe() {
    let h = harness().await;
    let mut rs = h.client.runtime_client();
    let status = rs
        .container_stats(pb::ContainerStatsRequest { container_id: "x".into() })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    let mut is = h.client.image_client();
    let status = is.image_fs_info(pb::ImageFsInfoRequest {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    // Status is implemented: a kubelet checks it.
    let st = rs.status(pb::StatusRequest { verbose: false }).await.unwrap().into_inner();
    assert_eq!(st.status.unwrap().conditions.len(), 2);

    let dynamic: Arc<dyn ContainerRuntime> = Arc::new(h.client.clone());
    assert_eq!(dynamic.version().await.unwrap().runtime_name, "fake");
}

#[tokio::test]
async fn separate_image_socket_and_detection_then_connect_first() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = FakeRuntime::new("rt");
    let images = FakeRuntime::new("img");
    images.add_image("only-on-image-socket:1", 5);
    let rs = fake::serve(runtime.clone(), dir.path().join("containerd.sock")).await.unwrap();
    let is = fake::serve(images, dir.path().join("images.sock")).await.unwrap();
    let client = CriClient::connect_with(rs.path(), Some(is.path())).await.unwrap();
    let listed = client.list_images(None).await.unwrap();
    assert_eq!(listed[0].repo_tags, vec!["only-on-image-socket:1"]);
    assert_eq!(client.version().await.unwrap().runtime_name, "fake");

    // A stale crio socket (nobody listening) after the live containerd one; and a dead first
    // candidate is skipped, as upstream's factory does.
    std::fs::create_dir_all(dir.path().join("crio")).unwrap();
    drop(std::os::unix::net::UnixListener::bind(dir.path().join("crio/crio.sock")).unwrap());
    let found = kruise_cri::detect_runtime(None, dir.path()).unwrap();
    assert_eq!(found.len(), 2);
    let (c, chosen, v) = CriClient::connect_first(&found).await.unwrap();
    assert_eq!(chosen.kind, kruise_cri::RuntimeKind::Containerd);
    assert_eq!(v.runtime_name, "fake");
    assert_eq!(c.socket(), rs.path());
    let reversed: Vec<_> = found.iter().rev().cloned().collect();
    let (_, chosen, _) = CriClient::connect_first(&reversed).await.unwrap();
    assert_eq!(chosen.kind, kruise_cri::RuntimeKind::Containerd);

    // Connecting to nothing is a Connect error naming the socket.
    let err = CriClient::connect(dir.path().join("crio/crio.sock")).await.unwrap_err();
    assert!(matches!(err, CriError::Connect { .. }), "{err:?}");
    assert!(err.to_string().contains("crio.sock"), "{err}");
    rs.shutdown().await;
    is.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_is_enforced_by_the_client() {
    let h = harness().await;
    let client = h.client.clone().with_request_timeout(Duration::from_millis(200));
    // Pulls have no client deadline (the imagepuller owns it)...
    h.rt.set_pull_delay(Some("slow:1"), Duration::from_millis(400));
    client.pull_image("slow:1", None, None).await.unwrap();
    // ...other calls do: an exec whose handler blocks longer than the deadline fails.
    // The handler blocks until released, so the client's answer comes first only if the
    // client itself gave up: order, not wall time.
    let (_, id) = running_container(&h, "p", "main").await;
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let wait = std::sync::Mutex::new(wait);
    let finished = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = finished.clone();
    h.rt.set_exec_handler(move |_, _| {
        let _ = wait.lock().map(|w| w.recv_timeout(Duration::from_secs(30)));
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        kruise_cri::ExecSyncResult::default()
    });
    let err = client.exec_sync(&id, vec!["x".into()], Duration::ZERO).await.unwrap_err();
    assert!(
        !finished.load(std::sync::atomic::Ordering::SeqCst),
        "the client waited for the handler"
    );
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded, "{err}");
    let _ = release.send(());
}
