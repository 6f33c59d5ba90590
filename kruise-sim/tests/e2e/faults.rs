//! Fault injection: kube-rs watchers through dropped watches and 410 Gone; failing,
//! throttled and slow requests seen by kube-rs and the real kubectl.

use crate::common;

use common::Env;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kruise_sim::faults::{Fault, FaultAction};
use kruise_sim::{Config, Server, ServerHandle};
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

async fn client(h: &ServerHandle) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(&h.kubeconfig).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.expect("config");
    kube::Client::try_from(cfg).expect("client")
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).expect("cm")
}

/// A watcher event as the test compares it: `Init`, `Apply(a)`, `WatchError(410)`, ...
fn describe(ev: &watcher::Result<watcher::Event<ConfigMap>>) -> String {
    match ev {
        Ok(ev) => ev.to_string(),
        Err(watcher::Error::WatchError(s)) => format!("WatchError({})", s.code),
        Err(watcher::Error::WatchStartFailed(kube::Error::Api(s))) => {
            format!("WatchStartFailed({})", s.code)
        }
        Err(e) => format!("Err({e})"),
    }
}

/// The watcher's next events, in order, up to and including the first `last`. The limit only
/// turns a hang into a failure (with what did arrive): the test asserts which events come and
/// in which order, never how fast; a backoff after an error alone may take seconds.
async fn events_until(events: &mut mpsc::UnboundedReceiver<String>, last: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(120), events.recv()).await {
            Ok(Some(e)) => {
                let done = e == last;
                seen.push(e);
                if done {
                    return seen;
                }
            }
            Ok(None) => panic!("the watcher ended before {last}; it sent {seen:?}"),
            Err(_) => panic!("no {last} from the watcher; it sent {seen:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_survives_dropped_watches_and_gone() {
    // No bookmarks during the test: one arriving between the secret's creation and the
    // compaction would move the watcher past the compacted history, and it would resume
    // without the 410 (and the relist) this test is about.
    let config = Config::default().with_bookmark_interval(Duration::from_secs(3600));
    let server = Server::start(config).await.expect("server");
    let c = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let (tx, mut events) = mpsc::unbounded_channel();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .for_each(move |ev| {
            let _ = tx.send(describe(&ev));
            async {}
        });
    let driver = tokio::spawn(stream);
    let seen = events_until(&mut events, "InitDone").await;
    assert_eq!(seen.first().map(String::as_str), Some("Init"), "{seen:?}");
    let relists = |seen: &[String]| seen.iter().filter(|e| *e == "Init").count();

    api.create(&PostParams::default(), &cm("a")).await.expect("create a");
    assert_eq!(events_until(&mut events, "Apply(a)").await, ["Apply(a)"]);

    // An established watch is cut: the watcher resumes from its resourceVersion. (b is
    // written after the drop, so only the resumed watch can bring it.)
    server.faults().drop_watches();
    api.create(&PostParams::default(), &cm("b")).await.expect("create b");
    let seen = events_until(&mut events, "Apply(b)").await;
    assert_eq!(relists(&seen), 0, "no relist was needed: {seen:?}");

    // Reconnections fail: dropped at once, refused with a 500, then allowed. c is written
    // after the drop, so it comes on the reconnection that got through, after every fault.
    let watch = |a| Fault::new(a).verb("watch").resource("configmaps");
    let dropped =
        server.faults().inject(watch(FaultAction::DropWatch { after_events: 0 }).times(2));
    let refused = server.faults().inject(watch(FaultAction::InternalError).times(1));
    server.faults().drop_watches();
    api.create(&PostParams::default(), &cm("c")).await.expect("create c");
    let seen = events_until(&mut events, "Apply(c)").await;
    assert_eq!(relists(&seen), 0, "no relist was needed: {seen:?}");
    assert!(seen.iter().any(|e| e == "WatchStartFailed(500)"), "{seen:?}");
    assert_eq!((dropped.count(), refused.count()), (2, 1), "every reconnection fault was met");

    // History compacted past the watcher's resourceVersion: 410 Gone, then a relist, and d
    // (written after the drop) only through the relist or the watch that follows it.
    let secrets: Api<Secret> = Api::namespaced(c.clone(), "default");
    let s: Secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).expect("secret");
    secrets.create(&PostParams::default(), &s).await.expect("secret");
    assert_eq!(server.faults().watches_expired(), 0, "no 410 before the compaction");
    server.compact();
    server.faults().drop_watches();
    api.create(&PostParams::default(), &cm("d")).await.expect("create d");
    let mut seen = events_until(&mut events, "InitDone").await;
    assert_eq!(seen[..2], ["WatchError(410)", "Init"], "the 410, then the relist: {seen:?}");
    assert_eq!(server.faults().watches_expired(), 1, "the server counted its 410");
    if !seen.iter().any(|e| e == "InitApply(d)") {
        seen.extend(events_until(&mut events, "Apply(d)").await);
    }
    assert_eq!(relists(&seen), 1, "one relist: {seen:?}");
    // a, b, c, d, and the namespace's kube-root-ca.crt.
    let mut names: Vec<_> = reader.state().iter().filter_map(|o| o.metadata.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["a", "b", "c", "d", "kube-root-ca.crt"]);
    driver.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_errors_reach_kube_clients() {
    let server = Server::start(Config::default()).await.expect("server");
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    api.create(&PostParams::default(), &cm("a")).await.expect("create");
    server.faults().inject(
        Fault::new(FaultAction::Conflict).verb("update").resource("configmaps").name("a").times(1),
    );
    let cur = api.get("a").await.expect("get");
    match api.replace("a", &PostParams::default(), &cur).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"));
            assert!(s.message.contains("the object has been modified"), "{}", s.message);
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    api.replace("a", &PostParams::default(), &cur).await.expect("the fault was used up");

    server.faults().inject(Fault::new(FaultAction::InternalError).verb("get").times(1));
    match api.get("a").await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 500);
            assert_eq!(s.message, "Internal error occurred: injected fault");
        }
        other => panic!("expected a 500, got {other:?}"),
    }
    let slowed = server
        .faults()
        .inject(Fault::new(FaultAction::Latency(Duration::from_millis(300))).verb("get").times(1));
    let t = Instant::now();
    api.get("a").await.expect("slow get");
    assert_eq!(slowed.count(), 1, "the latency fault acted on the get");
    assert!(t.elapsed() >= Duration::from_millis(300));
    server.faults().inject(Fault::new(FaultAction::InternalError).resource("secrets"));
    server.faults().clear();
    let secrets: Api<Secret> = Api::default_namespaced(client(&server).await);
    secrets.list(&Default::default()).await.expect("cleared");
}

#[test]
fn kubectl_retries_429_and_reports_500() {
    let env = Env::new(Config::default());
    env.ok_stdin(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
    env.server.faults().inject(
        Fault::new(FaultAction::TooManyRequests { retry_after_seconds: 1 })
            .verb("get")
            .resource("configmaps")
            .name("a")
            .times(1),
    );
    let t = Instant::now();
    assert!(env.ok(&["get", "cm", "a", "-o", "name"]).contains("configmap/a"));
    assert!(t.elapsed() >= Duration::from_millis(900), "kubectl honoured Retry-After");
    env.server
        .faults()
        .inject(Fault::new(FaultAction::InternalError).verb("create").resource("configmaps"));
    let o = env.run_with(
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"),
        Duration::from_secs(30),
    );
    assert!(
        o.stderr.contains(
            r#"Error from server (InternalError): error when creating "STDIN": Internal error occurred: injected fault"#
        ),
        "{}",
        o.stderr
    );
}
