//! The daemon binary with 100 pods on its node (each with two containers,
//! reported by containermeta), over the fake runtime served as a CRI socket.
//!
//! Only the outcome is checked here; the daemon's steady memory with these 100 pods is
//! measured by `cargo bench -p benches --bench daemon_memory` (target under 20 MiB).

use std::time::{Duration, Instant};

use kruise_cri::FakeRuntime;

use crate::common::*;
use crate::containerd::spawn_daemon;
use crate::fake::run_pod;

const PODS: usize = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_pods_are_all_reported() {
    let (server, client) = sim().await;
    let fake = FakeRuntime::new("node-a");
    fake.add_image("busybox:1", 1000);
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("run").join("containerd.sock");
    std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
    let _served = kruise_cri::fake::serve(fake.clone(), &sock).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..PODS {
        let name = format!("pod-{i}");
        let pod = create_pod(&client, &name, "busybox:1", &[("app", "x"), ("sidecar", "y")]).await;
        let uid = pod.metadata.uid.clone().unwrap();
        let c = run_pod(&fake, &name, &uid, "busybox:1", &["app", "sidecar"]);
        set_statuses(&client, &name, &[("app", &c[0]), ("sidecar", &c[1])]).await;
        ids.push(c);
    }
    let port = free_port();
    let daemon = spawn_daemon(dir.path(), &server.kubeconfig, &sock, port);
    let t = Instant::now();
    // Every pod reported: the daemon has seen them all.
    let pods = kube::Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), "default");
    wait_for("every pod's meta", Duration::from_secs(60), || {
        let pods = pods.clone();
        async move {
            let list = pods.list(&Default::default()).await.ok()?;
            let reported =
                list.items
                    .iter()
                    .filter(|p| {
                        p.metadata.annotations.as_ref().is_some_and(|a| {
                            a.contains_key("apps.kruise.io/runtime-containers-meta")
                        })
                    })
                    .count();
            (reported == PODS).then_some(())
        }
    })
    .await;
    eprintln!("{PODS} pods reported in {:?}", t.elapsed());
    drop(daemon);
}
