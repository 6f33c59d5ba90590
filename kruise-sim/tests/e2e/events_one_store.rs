//! `events.k8s.io/v1` and core `v1` Events are one resource stored once, as in a real API
//! server: an Event written through either API is read, watched, patched and deleted through
//! the other, its fields converted (regarding <-> involvedObject, note <-> message, ...).

use crate::common;

use common::{client, raw};

use base64::Engine as _;
use common::Env;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event;
use kruise_sim::{Config, Server};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use std::time::Duration;

const T: Duration = Duration::from_secs(10);
const CORE: &str = "/api/v1/namespaces/default/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

async fn get(c: &kube::Client, path: &str) -> Result<Value, kube::core::Status> {
    raw(c, "GET", path, "application/json", None).await
}

/// An Event in the events.k8s.io/v1 shape, with every field that API has but the
/// deprecated ones.
fn new_event(name: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default", "labels": {"via": "events"}},
        "regarding": {"kind": "Pod", "name": "web-0", "namespace": "default", "uid": "pod-uid",
            "apiVersion": "v1"},
        "related": {"kind": "Node", "name": "node-1", "apiVersion": "v1"},
        "note": "Pulled image nginx",
        "reason": "Pulled",
        "type": "Normal",
        "action": "PullImage",
        "eventTime": "2025-01-01T00:00:00.000001Z",
        "reportingController": "kubelet",
        "reportingInstance": "node-1",
        "series": {"count": 2, "lastObservedTime": "2025-01-01T00:01:00.000002Z"},
    })
}

/// A core/v1 Event with the fields core clients (client-go's old recorder) set.
fn new_core_event(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default", "labels": {"via": "core"}},
        "involvedObject": {"kind": "Deployment", "name": "web", "namespace": "default",
            "apiVersion": "apps/v1", "uid": "deploy-uid"},
        "message": "Scaled up replica set web-1 to 3",
        "reason": "ScalingReplicaSet",
        "type": "Warning",
        "source": {"component": "deployment-controller", "host": "cp-1"},
        "firstTimestamp": "2025-01-01T00:00:00Z",
        "lastTimestamp": "2025-01-01T00:05:00Z",
        "count": 4,
    })
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("name").to_string())
        .collect()
}

#[tokio::test]
async fn created_through_events_is_a_core_event() {
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    let created = raw(&c, "POST", EVENTS, "application/json", Some(new_event("e1")))
        .await
        .expect("create via events.k8s.io");
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "Pulled image nginx");
    assert_eq!(created["regarding"]["name"], "web-0");

    let core = get(&c, &format!("{CORE}/e1")).await.expect("get via core");
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["kind"], "Event");
    assert_eq!(core["involvedObject"], new_event("e1")["regarding"]);
    assert_eq!(core["related"], new_event("e1")["related"]);
    assert_eq!(core["message"], "Pulled image nginx");
    assert_eq!(core["reportingComponent"], "kubelet");
    assert_eq!(core["reportingInstance"], "node-1");
    assert_eq!(core["action"], "PullImage");
    assert_eq!(core["reason"], "Pulled");
    assert_eq!(core["type"], "Normal");
    assert_eq!(core["eventTime"], "2025-01-01T00:00:00.000001Z");
    assert_eq!(
        core["series"],
        json!({"count": 2, "lastObservedTime": "2025-01-01T00:01:00.000002Z"})
    );
    // One object: the same uid, resourceVersion and creationTimestamp.
    for f in ["uid", "resourceVersion", "creationTimestamp", "labels"] {
        assert_eq!(core["metadata"][f], created["metadata"][f], "{f}");
    }
    // Nothing of the other API's shape, and no field invented.
    let mut fields = keys(&core);
    fields.sort();
    assert_eq!(
        fields,
        [
            "action",
            "apiVersion",
            "eventTime",
            "involvedObject",
            "kind",
            "message",
            "metadata",
            "reason",
            "related",
            "reportingComponent",
            "reportingInstance",
            "series",
            "type"
        ]
    );

    // Typed core clients read it too.
    let typed: Api<CoreEvent> = Api::namespaced(c.clone(), "default");
    let e = typed.get("e1").await.expect("typed core get");
    assert_eq!(e.involved_object.name.as_deref(), Some("web-0"));
    assert_eq!(e.message.as_deref(), Some("Pulled image nginx"));
    assert_eq!(e.reporting_component.as_deref(), Some("kubelet"));
    assert_eq!(e.series.and_then(|s| s.count), Some(2));

    // A create through core of the same name conflicts: one store.
    let dup = raw(&c, "POST", CORE, "application/json", Some(new_core_event("e1")))
        .await
        .expect_err("already exists");
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    // A core body is not an events.k8s.io one.
    let wrong = raw(&c, "POST", EVENTS, "application/json", Some(new_core_event("e2")))
        .await
        .expect_err("wrong apiVersion");
    assert_eq!(wrong.code, 400, "{}", wrong.message);
}

#[tokio::test]
async fn created_through_core_lists_through_events_with_selectors() {
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    raw(&c, "POST", CORE, "application/json", Some(new_core_event("c1")))
        .await
        .expect("create via core");
    raw(&c, "POST", EVENTS, "application/json", Some(new_event("e1")))
        .await
        .expect("create via events");

    let list = get(&c, EVENTS).await.expect("list via events");
    assert_eq!(list["kind"], "EventList");
    assert_eq!(list["apiVersion"], "events.k8s.io/v1");
    assert_eq!(names(&list), ["c1", "e1"]);
    let c1 = &list["items"][0];
    assert_eq!(c1["regarding"], new_core_event("c1")["involvedObject"]);
    assert_eq!(c1["note"], "Scaled up replica set web-1 to 3");
    assert_eq!(c1["deprecatedCount"], 4);
    assert_eq!(c1["deprecatedFirstTimestamp"], "2025-01-01T00:00:00Z");
    assert_eq!(c1["deprecatedLastTimestamp"], "2025-01-01T00:05:00Z");
    assert_eq!(
        c1["deprecatedSource"],
        json!({"component": "deployment-controller", "host": "cp-1"})
    );
    assert_eq!(c1["reason"], "ScalingReplicaSet");
    assert_eq!(c1["type"], "Warning");
    for core_only in ["involvedObject", "message", "count", "source", "firstTimestamp"] {
        assert!(c1.get(core_only).is_none(), "{core_only} in {c1}");
    }
    // As kube-apiserver encodes it: no series, and a zero `eventTime` written as null.
    assert!(c1.get("series").is_none() && c1.get("eventTime") == Some(&Value::Null), "{c1}");
    assert!(c1.get("reportingController").is_none(), "empty, so left out: {c1}");

    // Typed events.k8s.io clients.
    let typed: Api<Event> = Api::namespaced(c.clone(), "default");
    let e = typed.get("c1").await.expect("typed events get");
    assert_eq!(e.regarding.and_then(|r| r.name).as_deref(), Some("web"));
    assert_eq!(e.deprecated_count, Some(4));

    // Field selectors: events.k8s.io names on events.k8s.io, core names on core.
    let sel = |api: &str, fs: &str| format!("{api}?fieldSelector={}", urlenc(fs));
    for (fs, want) in [
        ("regarding.name=web", vec!["c1"]),
        ("regarding.kind=Pod", vec!["e1"]),
        ("reportingController=kubelet", vec!["e1"]),
        ("type=Warning", vec!["c1"]),
        ("reason=Pulled", vec!["e1"]),
        ("source=deployment-controller", vec!["c1"]),
        ("metadata.name=e1", vec!["e1"]),
        ("metadata.namespace=default,regarding.uid!=pod-uid", vec!["c1"]),
    ] {
        let l = get(&c, &sel(EVENTS, fs)).await.expect(fs);
        assert_eq!(names(&l), want, "events.k8s.io {fs}");
    }
    for (fs, want) in [
        ("involvedObject.name=web-0", vec!["e1"]),
        ("involvedObject.kind=Deployment", vec!["c1"]),
        ("reportingComponent=kubelet", vec!["e1"]),
        ("reason=ScalingReplicaSet", vec!["c1"]),
        ("source=deployment-controller", vec!["c1"]),
        ("type=Normal", vec!["e1"]),
    ] {
        let l = get(&c, &sel(CORE, fs)).await.expect(fs);
        assert_eq!(names(&l), want, "core {fs}");
    }
    for (api, fs) in [(EVENTS, "involvedObject.name=web"), (CORE, "regarding.name=web")] {
        let e = get(&c, &sel(api, fs)).await.expect_err("unsupported field");
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            format!("field label not supported: {}", fs.split('=').next().unwrap_or_default())
        );
    }
    // Label selectors through either API.
    let l = get(&c, &format!("{EVENTS}?labelSelector=via%3Dcore")).await.expect("labels");
    assert_eq!(names(&l), ["c1"]);
    let l = get(&c, &format!("{CORE}?labelSelector=via%3Devents")).await.expect("labels");
    assert_eq!(names(&l), ["e1"]);
    // Paging through the events.k8s.io API.
    let p = get(&c, &format!("{EVENTS}?limit=1")).await.expect("page");
    assert_eq!(names(&p), ["c1"]);
    let tok = p["metadata"]["continue"].as_str().expect("continue");
    let p = get(&c, &format!("{EVENTS}?limit=1&continue={}", urlenc(tok))).await.expect("page 2");
    assert_eq!(names(&p), ["e1"]);
}

fn urlenc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn watches_see_writes_through_the_other_api() {
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    let core: Api<CoreEvent> = Api::namespaced(c.clone(), "default");
    let events: Api<Event> = Api::namespaced(c.clone(), "default");
    let wp = WatchParams::default().timeout(10);
    let mut core_watch = core.watch(&wp, "0").await.expect("core watch").boxed();
    let mut events_watch = events.watch(&wp, "0").await.expect("events watch").boxed();

    raw(&c, "POST", EVENTS, "application/json", Some(new_event("e1")))
        .await
        .expect("create via events");
    match tokio::time::timeout(T, core_watch.next()).await {
        Ok(Some(Ok(WatchEvent::Added(e)))) => {
            assert_eq!(e.metadata.name.as_deref(), Some("e1"));
            assert_eq!(e.involved_object.name.as_deref(), Some("web-0"));
            assert_eq!(e.message.as_deref(), Some("Pulled image nginx"));
            assert_eq!(e.reporting_component.as_deref(), Some("kubelet"));
        }
        other => panic!("core watch: expected ADDED, got {other:?}"),
    }
    match tokio::time::timeout(T, events_watch.next()).await {
        Ok(Some(Ok(WatchEvent::Added(e)))) => {
            assert_eq!(e.note.as_deref(), Some("Pulled image nginx"));
        }
        other => panic!("events watch: expected ADDED, got {other:?}"),
    }

    raw(&c, "POST", CORE, "application/json", Some(new_core_event("c1")))
        .await
        .expect("create via core");
    match tokio::time::timeout(T, events_watch.next()).await {
        Ok(Some(Ok(WatchEvent::Added(e)))) => {
            assert_eq!(e.metadata.name.as_deref(), Some("c1"));
            assert_eq!(e.regarding.and_then(|r| r.name).as_deref(), Some("web"));
            assert_eq!(e.note.as_deref(), Some("Scaled up replica set web-1 to 3"));
            assert_eq!(e.deprecated_count, Some(4));
        }
        other => panic!("events watch: expected ADDED, got {other:?}"),
    }
    match tokio::time::timeout(T, core_watch.next()).await {
        Ok(Some(Ok(WatchEvent::Added(e)))) => assert_eq!(e.metadata.name.as_deref(), Some("c1")),
        other => panic!("core watch: expected ADDED, got {other:?}"),
    }

    // A patch through one API is a MODIFIED through the other; a delete a DELETED.
    events
        .patch("c1", &PatchParams::default(), &Patch::Merge(json!({"note": "changed"})))
        .await
        .expect("patch via events");
    match tokio::time::timeout(T, core_watch.next()).await {
        Ok(Some(Ok(WatchEvent::Modified(e)))) => assert_eq!(e.message.as_deref(), Some("changed")),
        other => panic!("core watch: expected MODIFIED, got {other:?}"),
    }
    core.delete("e1", &DeleteParams::default()).await.expect("delete via core");
    loop {
        match tokio::time::timeout(T, events_watch.next()).await {
            Ok(Some(Ok(WatchEvent::Modified(_)))) => continue,
            Ok(Some(Ok(WatchEvent::Deleted(e)))) => {
                assert_eq!(e.metadata.name.as_deref(), Some("e1"));
                assert_eq!(e.note.as_deref(), Some("Pulled image nginx"));
                break;
            }
            other => panic!("events watch: expected DELETED, got {other:?}"),
        }
    }

    // A watch through events.k8s.io with an events.k8s.io field selector.
    let rv = core.list(&ListParams::default()).await.expect("list").metadata.resource_version;
    let wp = WatchParams::default().fields("regarding.name=web-1").timeout(10);
    let mut selected =
        events.watch(&wp, rv.as_deref().unwrap_or("0")).await.expect("watch").boxed();
    let mut other = new_core_event("c2");
    other["involvedObject"]["name"] = json!("web-2");
    raw(&c, "POST", CORE, "application/json", Some(other)).await.expect("create c2");
    let mut mine = new_core_event("c3");
    mine["involvedObject"]["name"] = json!("web-1");
    raw(&c, "POST", CORE, "application/json", Some(mine)).await.expect("create c3");
    match tokio::time::timeout(T, selected.next()).await {
        Ok(Some(Ok(WatchEvent::Added(e)))) => assert_eq!(e.metadata.name.as_deref(), Some("c3")),
        other => panic!("selected watch: expected ADDED c3, got {other:?}"),
    }
}

#[tokio::test]
async fn updates_and_patches_convert_back_to_storage() {
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    let events: Api<Event> = Api::namespaced(c.clone(), "default");
    let core: Api<CoreEvent> = Api::namespaced(c.clone(), "default");
    raw(&c, "POST", EVENTS, "application/json", Some(new_event("e1"))).await.expect("create");

    // Merge patch through events.k8s.io, as client-go's events library folds a series.
    let patch = json!({"series": {"count": 3, "lastObservedTime": "2025-01-01T00:02:00.000003Z"}});
    let patched =
        events.patch("e1", &PatchParams::default(), &Patch::Merge(patch)).await.expect("merge");
    assert_eq!(patched.series.as_ref().map(|s| s.count), Some(3));
    let got = get(&c, &format!("{CORE}/e1")).await.expect("core get");
    assert_eq!(
        got["series"],
        json!({"count": 3, "lastObservedTime": "2025-01-01T00:02:00.000003Z"})
    );
    assert_eq!(got["metadata"]["resourceVersion"], json!(patched.metadata.resource_version));

    // JSON patch through events.k8s.io addresses the served fields.
    let ops = json!([
        {"op": "test", "path": "/note", "value": "Pulled image nginx"},
        {"op": "replace", "path": "/note", "value": "Pulled again"},
        {"op": "add", "path": "/deprecatedCount", "value": 7},
    ]);
    raw(&c, "PATCH", &format!("{EVENTS}/e1"), "application/json-patch+json", Some(ops))
        .await
        .expect("json patch");
    let got = get(&c, &format!("{CORE}/e1")).await.expect("core get");
    assert_eq!(got["message"], "Pulled again");
    assert_eq!(got["count"], 7);
    assert!(got.get("note").is_none() && got.get("deprecatedCount").is_none(), "{got}");
    // A JSON patch naming a core field fails on the events.k8s.io shape.
    let bad = json!([{"op": "replace", "path": "/message", "value": "x"}]);
    let e = raw(&c, "PATCH", &format!("{EVENTS}/e1"), "application/json-patch+json", Some(bad))
        .await
        .expect_err("no /message in events.k8s.io");
    assert_eq!(e.code, 422, "{}", e.message);

    // Strategic merge patch through events.k8s.io.
    events
        .patch("e1", &PatchParams::default(), &Patch::Strategic(json!({"reason": "Repulled"})))
        .await
        .expect("strategic patch");
    assert_eq!(core.get("e1").await.expect("get").reason.as_deref(), Some("Repulled"));

    // Merge patch through core of an events.k8s.io Event.
    core.patch("e1", &PatchParams::default(), &Patch::Merge(json!({"series": {"count": 9}})))
        .await
        .expect("core merge");
    let e = events.get("e1").await.expect("get");
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(9));

    // PUT through core of what events.k8s.io created; read back through events.k8s.io.
    let mut obj = get(&c, &format!("{CORE}/e1")).await.expect("core get");
    obj["message"] = json!("replaced through core");
    obj["reportingComponent"] = json!("other-controller");
    raw(&c, "PUT", &format!("{CORE}/e1"), "application/json", Some(obj.clone()))
        .await
        .expect("core put");
    let e = get(&c, &format!("{EVENTS}/e1")).await.expect("events get");
    assert_eq!(e["note"], "replaced through core");
    assert_eq!(e["reportingController"], "other-controller");
    // The stale body is refused through the other API: one resourceVersion.
    let mut stale = e.clone();
    stale["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"].clone();
    let conflict = raw(&c, "PUT", &format!("{EVENTS}/e1"), "application/json", Some(stale))
        .await
        .expect_err("stale");
    assert_eq!(conflict.code, 409);
    // PUT through events.k8s.io.
    let mut typed = events.get("e1").await.expect("get");
    typed.note = Some("replaced through events".into());
    typed.deprecated_source =
        Some(serde_json::from_value(json!({"component": "x"})).expect("source"));
    events.replace("e1", &PostParams::default(), &typed).await.expect("events put");
    let got = core.get("e1").await.expect("get");
    assert_eq!(got.message.as_deref(), Some("replaced through events"));
    assert_eq!(got.source.and_then(|s| s.component).as_deref(), Some("x"));
    // PUT creates Events (create on update), through events.k8s.io too.
    raw(&c, "PUT", &format!("{EVENTS}/e9"), "application/json", Some(new_event("e9")))
        .await
        .expect("put creates");
    assert_eq!(core.get("e9").await.expect("get").message.as_deref(), Some("Pulled image nginx"));
    // Dry run writes nothing.
    raw(&c, "POST", &format!("{EVENTS}?dryRun=All"), "application/json", Some(new_event("e8")))
        .await
        .expect("dry run");
    assert_eq!(get(&c, &format!("{CORE}/e8")).await.expect_err("absent").code, 404);
}

#[tokio::test]
async fn deletes_remove_from_both_apis() {
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    raw(&c, "POST", EVENTS, "application/json", Some(new_event("e1"))).await.expect("create");
    raw(&c, "POST", CORE, "application/json", Some(new_core_event("c1"))).await.expect("create");

    let gone = raw(&c, "DELETE", &format!("{EVENTS}/c1"), "application/json", None)
        .await
        .expect("delete core event via events.k8s.io");
    assert_eq!(gone["note"], "Scaled up replica set web-1 to 3");
    assert_eq!(get(&c, &format!("{CORE}/c1")).await.expect_err("gone").code, 404);
    let gone = raw(&c, "DELETE", &format!("{CORE}/e1"), "application/json", None)
        .await
        .expect("delete events.k8s.io event via core");
    assert_eq!(gone["message"], "Pulled image nginx");
    assert_eq!(get(&c, &format!("{EVENTS}/e1")).await.expect_err("gone").code, 404);

    // deletecollection through events.k8s.io, with an events.k8s.io field selector.
    for (n, name) in [("a", "web-1"), ("b", "web-2"), ("d", "web-1")] {
        let mut e = new_event(n);
        e["regarding"]["name"] = json!(name);
        raw(&c, "POST", EVENTS, "application/json", Some(e)).await.expect("create");
    }
    let deleted = raw(
        &c,
        "DELETE",
        &format!("{EVENTS}?fieldSelector=regarding.name%3Dweb-1"),
        "application/json",
        None,
    )
    .await
    .expect("deletecollection");
    assert_eq!(names(&deleted), ["a", "d"]);
    assert_eq!(deleted["items"][0]["regarding"]["name"], "web-1");
    assert_eq!(names(&get(&c, CORE).await.expect("list")), ["b"]);
    // And through core.
    raw(&c, "DELETE", CORE, "application/json", None).await.expect("deletecollection");
    assert_eq!(names(&get(&c, EVENTS).await.expect("list")), Vec::<String>::new());
}

#[test]
fn kubectl_shows_events_from_either_api() {
    let env = Env::new(Config::default());
    let manifest = serde_yaml::to_string(&new_event("from-events")).expect("yaml");
    env.ok_stdin(&["create", "-f", "-"], &manifest);
    let mut core = new_core_event("from-core");
    core["involvedObject"]["name"] = json!("api");
    env.ok_stdin(&["create", "-f", "-"], &serde_yaml::to_string(&core).expect("yaml"));

    for resource in ["events", "events.v1.events.k8s.io"] {
        let out = env.ok(&["get", resource]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{resource}:\n{out}");
        for h in ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"] {
            assert!(lines[0].contains(h), "{resource}:\n{out}");
        }
        let row = lines.iter().find(|l| l.contains("pod/web-0")).expect("events.k8s.io row");
        assert!(
            row.contains("Normal") && row.contains("Pulled") && row.contains("Pulled image nginx"),
            "{out}"
        );
        let row = lines.iter().find(|l| l.contains("deployment/api")).expect("core row");
        assert!(
            row.contains("Warning") && row.contains("Scaled up replica set web-1 to 3"),
            "{out}"
        );
    }
    let core = env.json(&["get", "events", "from-events"]);
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "Pulled image nginx");
    let ev = env.json(&["get", "events.v1.events.k8s.io", "from-core"]);
    assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
    assert_eq!(ev["note"], "Scaled up replica set web-1 to 3");
    let out = env.ok(&[
        "get",
        "events.events.k8s.io",
        "--field-selector",
        "regarding.name=api",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "event.events.k8s.io/from-core");
    env.ok(&["delete", "events.events.k8s.io", "from-events"]);
    assert_eq!(env.ok(&["get", "events", "-o", "name"]).trim(), "event/from-core");
}

type Hooks = common::webhook::HookServer;

fn start_hooks() -> Hooks {
    common::webhook::start(&["127.0.0.1"], answer)
}

/// `/core-mutate` appends " (checked)" to a core Event's `message`; `/events-validate`
/// denies an events.k8s.io Event whose `note` mentions "forbidden".
fn answer(path: &str, review: &Value) -> Value {
    let req = &review["request"];
    let uid = req["uid"].clone();
    let resp = match path {
        "/core-mutate" => match req["object"]["message"].as_str() {
            Some(m) => {
                let patch = json!([{"op": "replace", "path": "/message", "value": format!("{m} (checked)")}]);
                json!({"uid": uid, "allowed": true, "patchType": "JSONPatch",
                    "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string())})
            }
            None => json!({"uid": uid, "allowed": true}),
        },
        "/events-validate" => {
            let note = req["object"]["note"].as_str().unwrap_or_default();
            if note.contains("forbidden") {
                json!({"uid": uid, "allowed": false, "status": {"message": "no forbidden notes"}})
            } else {
                json!({"uid": uid, "allowed": true})
            }
        }
        _ => json!({"uid": uid, "allowed": true}),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})
}

#[tokio::test]
async fn webhooks_see_events_in_the_version_they_registered_for() {
    let hooks = start_hooks();
    let server = Server::start(Config::default()).await.expect("server");
    let c = client(&server).await;
    let ca = base64::engine::general_purpose::STANDARD.encode(&hooks.ca_pem);
    let hook = |name: &str, path: &str, group: &str, policy: &str| {
        json!({
            "name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "matchPolicy": policy,
            "clientConfig": {"url": format!("https://{}{path}", hooks.addr), "caBundle": ca},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [group],
                "apiVersions": ["v1"], "resources": ["events"]}],
        })
    };
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "core-events"},
        "webhooks": [hook("core.events.test", "/core-mutate", "", "Equivalent")],
    });
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "events-events"},
        "webhooks": [hook("events.events.test", "/events-validate", "events.k8s.io", "Exact")],
    });
    let base = "/apis/admissionregistration.k8s.io/v1";
    raw(
        &c,
        "POST",
        &format!("{base}/mutatingwebhookconfigurations"),
        "application/json",
        Some(mutating),
    )
    .await
    .expect("mutating config");
    raw(
        &c,
        "POST",
        &format!("{base}/validatingwebhookconfigurations"),
        "application/json",
        Some(validating),
    )
    .await
    .expect("validating config");

    // Through events.k8s.io: the core webhook (Equivalent) sees a core Event, its patch
    // lands in the note; the events.k8s.io webhook sees the mutated events.k8s.io Event.
    let created = raw(&c, "POST", EVENTS, "application/json", Some(new_event("e1")))
        .await
        .expect("create via events.k8s.io");
    assert_eq!(created["note"], "Pulled image nginx (checked)");
    let core = get(&c, &format!("{CORE}/e1")).await.expect("core get");
    assert_eq!(core["message"], "Pulled image nginx (checked)");
    let seen: Vec<(String, Value)> = hooks.seen.lock().expect("seen").drain(..).collect();
    let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["/core-mutate", "/events-validate"]);
    let req = &seen[0].1["request"];
    assert_eq!(req["kind"], json!({"group": "", "version": "v1", "kind": "Event"}));
    assert_eq!(req["resource"], json!({"group": "", "version": "v1", "resource": "events"}));
    assert_eq!(
        req["requestKind"],
        json!({"group": "events.k8s.io", "version": "v1", "kind": "Event"})
    );
    assert_eq!(req["object"]["apiVersion"], "v1");
    assert_eq!(req["object"]["message"], "Pulled image nginx");
    assert_eq!(req["object"]["involvedObject"]["name"], "web-0");
    assert!(req["object"].get("note").is_none(), "{}", req["object"]);
    let req = &seen[1].1["request"];
    assert_eq!(req["kind"], json!({"group": "events.k8s.io", "version": "v1", "kind": "Event"}));
    assert_eq!(req["object"]["apiVersion"], "events.k8s.io/v1");
    assert_eq!(req["object"]["note"], "Pulled image nginx (checked)");
    assert!(req["object"].get("message").is_none(), "{}", req["object"]);

    // An update through events.k8s.io: old and new objects converted for the core webhook.
    raw(
        &c,
        "PATCH",
        &format!("{EVENTS}/e1"),
        "application/merge-patch+json",
        Some(json!({"note": "again"})),
    )
    .await
    .expect("patch via events.k8s.io");
    assert_eq!(get(&c, &format!("{CORE}/e1")).await.expect("get")["message"], "again (checked)");
    let seen: Vec<(String, Value)> = hooks.seen.lock().expect("seen").drain(..).collect();
    let req = &seen[0].1["request"];
    assert_eq!(
        (req["operation"].as_str(), req["object"]["message"].as_str()),
        (Some("UPDATE"), Some("again"))
    );
    assert_eq!(req["oldObject"]["message"], "Pulled image nginx (checked)");

    // The validating webhook denies through events.k8s.io.
    let mut bad = new_event("e2");
    bad["note"] = json!("forbidden thing");
    let e = raw(&c, "POST", EVENTS, "application/json", Some(bad)).await.expect_err("denied");
    assert!(e.message.contains("no forbidden notes"), "{}", e.message);
    assert_eq!(get(&c, &format!("{CORE}/e2")).await.expect_err("absent").code, 404);

    // Through core: only the core webhook (the events.k8s.io one is Exact).
    hooks.seen.lock().expect("seen").clear();
    let mut ok = new_core_event("c1");
    ok["message"] = json!("forbidden, but through core");
    raw(&c, "POST", CORE, "application/json", Some(ok)).await.expect("create via core");
    let seen: Vec<(String, Value)> = hooks.seen.lock().expect("seen").drain(..).collect();
    let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["/core-mutate"]);
    assert_eq!(
        seen[0].1["request"]["requestKind"],
        json!({"group": "", "version": "v1", "kind": "Event"})
    );
    let e = get(&c, &format!("{EVENTS}/c1")).await.expect("events get");
    assert_eq!(e["note"], "forbidden, but through core (checked)");
}
