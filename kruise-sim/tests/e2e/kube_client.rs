//! kube-rs clients (Api, watcher, reflector) against an in-process kruise-sim.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kruise_sim::{Config, Server, ServerHandle};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;
use std::time::Duration;

async fn client(h: &ServerHandle) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&h.kubeconfig).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.expect("config");
    kube::Client::try_from(cfg).expect("client")
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"app": "t"}}, "data": {"k": "v"}}),
    )
    .expect("configmap")
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "p"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .expect("pod")
}

const T: Duration = Duration::from_secs(10);

#[tokio::test]
async fn crud_conflict_and_errors() {
    let server = Server::start(Config::default()).await.expect("server");
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.expect("create");
    let stale = created.clone();
    let mut fresh = api.get("a").await.expect("get");
    fresh.data.get_or_insert_default().insert("k".into(), "w".into());
    api.replace("a", &PostParams::default(), &fresh).await.expect("replace");
    match api.replace("a", &PostParams::default(), &stale).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 409);
            assert_eq!(s.reason, "Conflict");
            assert_eq!(
                s.message,
                r#"Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again"#
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    match api.get("missing").await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
            assert_eq!(s.message, r#"configmaps "missing" not found"#);
        }
        other => panic!("expected not found, got {other:?}"),
    }
    let list = api.list(&ListParams::default().labels("app=t")).await.expect("list");
    assert_eq!(list.items.len(), 1);
    // Delete with a failing precondition.
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("nope".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete("a", &dp).await {
        Err(kube::Error::Api(s)) => {
            // kube-apiserver's rest.BeforeDelete text, the object named by its kind.
            assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
            assert!(
                s.message.starts_with(r#"Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (nope) does not match the UID in record ("#),
                "{}",
                s.message
            );
            assert!(
                s.message.ends_with("). The object might have been deleted and then recreated"),
                "{}",
                s.message
            );
        }
        other => panic!("expected a precondition failure, got {other:?}"),
    }
    api.delete("a", &DeleteParams::default()).await.expect("delete");
    assert!(api.get_opt("a").await.expect("get_opt").is_none());
}

#[tokio::test]
async fn generation_and_status() {
    let server = Server::start(Config::default()).await.expect("server");
    let api: Api<Deployment> = Api::namespaced(client(&server).await, "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}
    }))
    .expect("deployment");
    let d = api.create(&PostParams::default(), &d).await.expect("create");
    assert_eq!(d.metadata.generation, Some(1));
    let pp = PatchParams::default();
    let d = api
        .patch_status(
            "d",
            &pp,
            &Patch::Merge(json!({"status": {"replicas": 1, "observedGeneration": 1}})),
        )
        .await
        .expect("status");
    assert_eq!(d.metadata.generation, Some(1), "status writes leave generation alone");
    assert_eq!(d.status.as_ref().and_then(|s| s.replicas), Some(1));
    let d = api
        .patch("d", &pp, &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})))
        .await
        .expect("labels");
    assert_eq!(d.metadata.generation, Some(1), "metadata writes leave generation alone");
    let d = api
        .patch("d", &pp, &Patch::Strategic(json!({"spec": {"replicas": 3}})))
        .await
        .expect("spec");
    assert_eq!(d.metadata.generation, Some(2));
    let s = api.get_scale("d").await.expect("scale");
    assert_eq!(s.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(s.status.and_then(|s| s.selector).as_deref(), Some("a=b"));
}

#[tokio::test]
async fn raw_watch_bookmarks_and_gone() {
    let server =
        Server::start(Config::default().with_bookmark_interval(Duration::from_millis(200)))
            .await
            .expect("server");
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    let first = api.create(&PostParams::default(), &cm("w0")).await.expect("create");
    let rv0 = first.metadata.resource_version.clone().expect("rv");
    let wp = WatchParams { bookmarks: true, ..WatchParams::default() }.timeout(5);
    let mut stream = api.watch(&wp, &rv0).await.expect("watch").boxed();
    api.create(&PostParams::default(), &cm("w1")).await.expect("create");
    let mut saw_added = false;
    let mut saw_bookmark = false;
    let deadline = tokio::time::Instant::now() + T;
    while !(saw_added && saw_bookmark) && tokio::time::Instant::now() < deadline {
        match tokio::time::timeout(T, stream.next()).await {
            Ok(Some(Ok(WatchEvent::Added(c)))) => {
                assert_eq!(c.metadata.name.as_deref(), Some("w1"));
                saw_added = true;
            }
            Ok(Some(Ok(WatchEvent::Bookmark(_)))) => saw_bookmark = true,
            Ok(Some(Ok(other))) => panic!("unexpected {other:?}"),
            other => panic!("watch ended: {other:?}"),
        }
    }
    assert!(saw_added && saw_bookmark);
    // After compaction, resuming from an old resourceVersion is 410 Gone.
    server.cluster().store().compact();
    let mut stream =
        api.watch(&WatchParams::default().timeout(5), &rv0).await.expect("watch").boxed();
    match tokio::time::timeout(T, stream.next()).await {
        Ok(Some(Ok(WatchEvent::Error(e)))) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected 410, got {other:?}"),
    }
}

async fn watcher_sees_pods(config: watcher::Config) {
    let server = Server::start(Config::default()).await.expect("server");
    let api: Api<Pod> = Api::namespaced(client(&server).await, "default");
    api.create(&PostParams::default(), &pod("before")).await.expect("create");
    let (reader, writer) = reflector::store::<Pod>();
    let stream = reflector(writer, watcher(api.clone(), config)).applied_objects();
    let mut stream = stream.boxed();
    let first = tokio::time::timeout(T, stream.try_next())
        .await
        .expect("in time")
        .expect("ok")
        .expect("some");
    assert_eq!(first.metadata.name.as_deref(), Some("before"));
    api.create(&PostParams::default(), &pod("after")).await.expect("create");
    let next = tokio::time::timeout(T, stream.try_next())
        .await
        .expect("in time")
        .expect("ok")
        .expect("some");
    assert_eq!(next.metadata.name.as_deref(), Some("after"));
    assert_eq!(reader.state().len(), 2);
    // A binding shows up in the watch as a modification.
    let pods: Api<Pod> = api.clone();
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "after"}, "target": {"kind": "Node", "name": "n1"}});
    let req = http::Request::post("/api/v1/namespaces/default/pods/after/binding")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&binding).expect("json"))
        .expect("request");
    let status: serde_json::Value = client(&server).await.request(req).await.expect("binding");
    assert_eq!(status["status"], "Success");
    let bound = tokio::time::timeout(T, stream.try_next())
        .await
        .expect("in time")
        .expect("ok")
        .expect("some");
    assert_eq!(bound.spec.and_then(|s| s.node_name).as_deref(), Some("n1"));
    let on_node = pods.list(&ListParams::default().fields("spec.nodeName=n1")).await.expect("list");
    assert_eq!(on_node.items.len(), 1);
}

#[tokio::test]
async fn watcher_and_reflector_list_then_watch() {
    watcher_sees_pods(watcher::Config::default()).await;
}

#[tokio::test]
async fn watcher_streaming_lists() {
    watcher_sees_pods(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn watcher_with_paging_and_selectors() {
    let server = Server::start(Config::default()).await.expect("server");
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    for i in 0..7 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"))).await.expect("create");
    }
    let cfg = watcher::Config::default().labels("app=t").page_size(2);
    let (reader, writer) = reflector::store::<ConfigMap>();
    let driver = tokio::spawn(reflector(writer, watcher(api.clone(), cfg)).for_each(|_| async {}));
    tokio::time::timeout(T, reader.wait_until_ready()).await.expect("in time").expect("ready");
    assert_eq!(reader.state().len(), 7);
    // Removing the label makes the object leave the selection: a deletion for this watcher.
    api.patch(
        "c0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": null}}})),
    )
    .await
    .expect("patch");
    let deadline = tokio::time::Instant::now() + T;
    while reader.state().len() != 6 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    driver.abort();
    assert_eq!(reader.state().len(), 6);
}

/// Watchers of one resource share each event's encoding (as kube-apiserver's watch cache does);
/// what each receives is still its own view: every watcher, live or resuming from a
/// resourceVersion, sees the same objects, and a selector transition still reads as the event
/// type that watcher should see.
#[tokio::test]
async fn watchers_sharing_an_events_encoding_each_see_their_own_view() {
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    let api: Api<Pod> = Api::namespaced(c.clone(), "default");
    let start = api.list(&ListParams::default()).await.expect("list").metadata.resource_version;
    let start = start.expect("a resourceVersion");
    let everything = WatchParams::default().timeout(5);
    let selected = WatchParams::default().labels("app=p").timeout(5);
    let mut all_a = api.watch(&everything, &start).await.expect("watch").boxed();
    let mut all_b = api.watch(&everything, &start).await.expect("watch").boxed();
    let mut only_p = api.watch(&selected, &start).await.expect("watch").boxed();

    api.create(&PostParams::default(), &pod("w")).await.expect("create");
    let relabel = json!({"metadata": {"labels": {"app": "q"}}});
    api.patch("w", &PatchParams::default(), &Patch::Merge(&relabel)).await.expect("patch");

    let next =
        async |stream: &mut futures::stream::BoxStream<'_, kube::Result<WatchEvent<Pod>>>| {
            let event = tokio::time::timeout(T, stream.try_next()).await.expect("in time");
            event.expect("an event").expect("not the end")
        };
    let describe = |event: WatchEvent<Pod>| match event {
        WatchEvent::Added(p) => ("ADDED", serde_json::to_value(p).expect("pod")),
        WatchEvent::Modified(p) => ("MODIFIED", serde_json::to_value(p).expect("pod")),
        WatchEvent::Deleted(p) => ("DELETED", serde_json::to_value(p).expect("pod")),
        other => panic!("unexpected {other:?}"),
    };
    let a = [describe(next(&mut all_a).await), describe(next(&mut all_a).await)];
    let b = [describe(next(&mut all_b).await), describe(next(&mut all_b).await)];
    let p = [describe(next(&mut only_p).await), describe(next(&mut only_p).await)];
    assert_eq!(a, b, "two JSON watchers see the same events");
    assert_eq!((a[0].0, a[1].0), ("ADDED", "MODIFIED"));
    assert_eq!(a[1].1["metadata"]["labels"]["app"], "q");
    // The selected watcher saw the pod leave its selector: a DELETED of the new state.
    assert_eq!((p[0].0, p[1].0), ("ADDED", "DELETED"));
    assert_eq!(p[0].1, a[0].1);
    assert_eq!(p[1].1, a[1].1);

    // A watch resuming from the start replays the same events, from the same encodings.
    let mut resumed = api.watch(&everything, &start).await.expect("watch").boxed();
    let r = [describe(next(&mut resumed).await), describe(next(&mut resumed).await)];
    assert_eq!(r, a);
}
