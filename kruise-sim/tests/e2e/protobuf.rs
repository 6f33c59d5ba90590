//! Kubernetes protobuf request bodies: kubectl's imperative generators (which send
//! `application/vnd.kubernetes.protobuf`) against an in-process kruise-sim, and raw requests.

use crate::common;

use common::Env;
use kruise_sim::{Config, Server};
use serde_json::{Value, json};

/// `kubectl create` generator arguments, in an order where `--from` sources exist.
const GENERATORS: &[&[&str]] = &[
    &["configmap", "c1", "--from-literal=a=b", "--from-literal=x=y"],
    &["secret", "generic", "s1", "--from-literal=a=b", "--type=Opaque"],
    &[
        "secret",
        "docker-registry",
        "d1",
        "--docker-server=x",
        "--docker-username=u",
        "--docker-password=p",
    ],
    &["serviceaccount", "sa1"],
    &["deployment", "web", "--image=nginx", "--replicas=2", "--port=80"],
    &["deployment", "multi", "--image=nginx", "--image=busybox"],
    &["deployment", "zero", "--image=nginx", "--replicas=0"],
    &["job", "j1", "--image=busybox", "--", "echo", "hi"],
    &["cronjob", "cj1", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
    &["job", "fromcron", "--from=cronjob/cj1"],
    &["service", "clusterip", "svc1", "--tcp=80:8080", "--tcp=443:8443"],
    &["service", "clusterip", "headless", "--clusterip=None"],
    &["pdb", "p1", "--selector=a=b", "--min-available=1"],
    &["pdb", "p2", "--selector=a=b", "--max-unavailable=50%"],
];

/// The resource and name a generator creates.
fn target(args: &[&str]) -> (String, String) {
    match args {
        ["secret", _, name, ..] | ["service", _, name, ..] => {
            (args[0].to_string(), name.to_string())
        }
        [kind, name, ..] => (kind.to_string(), name.to_string()),
        _ => panic!("bad generator {args:?}"),
    }
}

/// An object without what differs between two creations of it (identity, time, namespace,
/// allocated cluster IPs, owners' uids).
fn normalized(mut v: Value) -> Value {
    let uid = v["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    if let Some(m) = v["metadata"].as_object_mut() {
        for k in ["uid", "resourceVersion", "creationTimestamp", "namespace", "managedFields"] {
            m.remove(k);
        }
    }
    if let Some(refs) = v["metadata"]["ownerReferences"].as_array_mut() {
        for r in refs {
            r["uid"] = json!("<owner>");
        }
    }
    if let Some(spec) = v["spec"].as_object_mut()
        && spec.get("clusterIP").is_some_and(|ip| ip != "None")
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    let text = serde_json::to_string(&v).expect("serializes");
    let text = if uid.is_empty() { text } else { text.replace(&uid, "<uid>") };
    serde_json::from_str(&text).expect("parses")
}

#[test]
fn generators_store_what_their_json_would_have_stored() {
    let env = Env::new(Config::default());
    env.ok(&["create", "namespace", "pb"]);
    env.ok(&["create", "namespace", "js"]);
    for args in GENERATORS {
        // Through protobuf, as kubectl sends it.
        let mut pb = vec!["create", "-n", "pb"];
        pb.extend_from_slice(args);
        env.ok(&pb);
        // Through JSON: the generator's own JSON rendering, created from a file.
        let mut dry = vec!["create", "-n", "js", "--dry-run=client", "-o", "json"];
        dry.extend_from_slice(args);
        let manifest = env.ok(&dry);
        env.ok_stdin(&["create", "-n", "js", "-f", "-"], &manifest);

        let (resource, name) = target(args);
        let via_pb = env.json(&["get", &resource, &name, "-n", "pb"]);
        let via_js = env.json(&["get", &resource, &name, "-n", "js"]);
        assert_eq!(via_pb["metadata"]["namespace"], "pb");
        assert_eq!(normalized(via_pb), normalized(via_js), "kubectl create {args:?}");
    }
    // A cluster-scoped kind: the namespace itself.
    env.ok(&["create", "namespace", "prod"]);
    let manifest =
        env.ok(&["create", "namespace", "prod-viajson", "--dry-run=client", "-o", "json"]);
    env.ok_stdin(&["create", "-f", "-"], &manifest);
    let via_pb = normalized(env.json(&["get", "namespace", "prod"]));
    let via_js = env.json(&["get", "namespace", "prod-viajson"]);
    let via_js: Value = serde_json::from_str(
        &serde_json::to_string(&normalized(via_js)).expect("json").replace("prod-viajson", "prod"),
    )
    .expect("json");
    assert_eq!(via_pb, via_js);
}

#[test]
fn generated_objects_read_back() {
    let env = Env::new(Config::default());
    env.ok(&["create", "namespace", "prod"]);
    let ns = env.json(&["get", "namespace", "prod"]);
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));

    env.ok(&["create", "configmap", "c", "--from-literal=a=b", "-n", "prod"]);
    assert_eq!(env.json(&["get", "cm", "c", "-n", "prod"])["data"], json!({"a": "b"}));
    // Non-UTF-8 file contents travel as protobuf bytes and land in binaryData.
    let blob = env.dir.path().join("blob");
    std::fs::write(&blob, [0xff, 0x00, 0xfe]).expect("blob written");
    let from_file = format!("--from-file=blob={}", blob.display());
    env.ok(&["create", "configmap", "bin", &from_file, "--from-literal=t=x"]);
    let cm = env.json(&["get", "cm", "bin"]);
    assert_eq!(cm["binaryData"], json!({"blob": "/wD+"}));
    assert_eq!(cm["data"], json!({"t": "x"}));

    let out = env.ok(&["create", "secret", "generic", "s", "--from-literal=a=b"]);
    assert_eq!(out.trim(), "secret/s created");
    let s = env.json(&["get", "secret", "s"]);
    assert_eq!(s["data"], json!({"a": "Yg=="}));
    assert_eq!(s["type"], "Opaque");

    let out =
        env.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80"]);
    assert_eq!(out.trim(), "deployment.apps/web created");
    let d = env.json(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["spec"]["selector"], json!({"matchLabels": {"app": "web"}}));
    assert_eq!(d["metadata"]["labels"], json!({"app": "web"}));
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!((c["name"].as_str(), c["image"].as_str()), (Some("nginx"), Some("nginx")));
    assert_eq!(c["ports"], json!([{"containerPort": 80, "protocol": "TCP"}]));
    assert_eq!(d["spec"]["template"]["metadata"]["labels"], json!({"app": "web"}));
    // Server defaults applied as for JSON bodies.
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(c["imagePullPolicy"], "Always");

    env.ok(&["create", "deployment", "zero", "--image=nginx", "--replicas=0"]);
    assert_eq!(env.json(&["get", "deploy", "zero"])["spec"]["replicas"], 0);

    env.ok(&["create", "serviceaccount", "sa"]);
    let sa = env.json(&["get", "serviceaccount", "sa"]);
    assert_eq!(sa["metadata"]["name"], "sa");
    assert_eq!(sa["metadata"]["namespace"], "default");

    env.ok(&["create", "job", "j", "--image=busybox", "--", "echo", "hi"]);
    let j = env.json(&["get", "job", "j"]);
    let c = &j["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["command"], json!(["echo", "hi"]));
    assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "Never");

    env.ok(&["create", "service", "clusterip", "svc", "--tcp=80:8080"]);
    let svc = env.json(&["get", "service", "svc"]);
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    assert_eq!(svc["spec"]["selector"], json!({"app": "svc"}));
    assert_eq!(svc["spec"]["type"], "ClusterIP");

    // Errors from the server reach kubectl as for JSON bodies.
    let e = env.fails(&["create", "configmap", "c", "--from-literal=a=b", "-n", "prod"]);
    assert!(e.contains(r#"configmaps "c" already exists"#), "{e}");
    let e = env.fails(&["create", "deployment", "Bad_Name", "--image=nginx"]);
    assert!(e.contains("Bad_Name"), "{e}");
}

#[test]
fn follow_up_commands_on_generated_objects() {
    let env = Env::new(Config::default());
    env.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=2", "--port=80"]);
    env.ok(&["label", "deployment", "web", "tier=frontend"]);
    env.ok(&["annotate", "deployment", "web", "note=hello"]);
    env.ok(&["scale", "deployment", "web", "--replicas=3"]);
    env.ok(&["set", "image", "deployment/web", "nginx=nginx:1.27"]);
    let d = env.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["labels"]["tier"], "frontend");
    assert_eq!(d["metadata"]["annotations"]["note"], "hello");
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");

    env.ok(&["expose", "deployment", "web", "--port=8080", "--target-port=80"]);
    let svc = env.json(&["get", "service", "web"]);
    assert_eq!(svc["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(svc["spec"]["ports"][0]["port"], 8080);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);

    env.ok(&["create", "namespace", "prod"]);
    env.ok(&["label", "namespace", "prod", "env=prod"]);
    let ns = env.json(&["get", "namespace", "prod"]);
    assert_eq!(ns["metadata"]["labels"]["env"], "prod");
    env.ok(&["create", "cronjob", "cj", "--image=busybox", "--schedule=0 * * * *"]);
    env.ok(&["create", "job", "manual", "--from=cronjob/cj"]);
    let j = env.json(&["get", "job", "manual"]);
    assert_eq!(j["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(j["metadata"]["ownerReferences"][0]["name"], "cj");
    assert_eq!(j["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"], "manual");
}

// --- Raw requests -----------------------------------------------------------------------------

/// `kubectl create namespace prod` as kubectl v1.32 sends it.
const NAMESPACE_BODY: &[u8] = b"k8s\x00\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12\x1c\x0a\x14\x0a\x04prod\x12\x00\x1a\x00\x22\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

/// A length-delimited field.
fn ld(num: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(u64::from(num) << 3 | 2);
    out.extend(varint(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [ld(1, api_version.as_bytes()), ld(2, kind.as_bytes())].concat();
    [b"k8s\0".to_vec(), ld(1, &type_meta), ld(2, raw)].concat()
}

struct Answer {
    code: u16,
    content_type: String,
    warnings: Vec<String>,
    body: Value,
}

async fn post(client: &kube::Client, path: &str, body: Vec<u8>) -> Answer {
    let req = http::Request::post(path)
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .header("accept", "application/vnd.kubernetes.protobuf,application/json")
        .body(kube::client::Body::from(body))
        .expect("request");
    let res = client.send(req).await.expect("sent");
    let code = res.status().as_u16();
    let header = |n: &str| -> Vec<String> {
        res.headers()
            .get_all(n)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    let content_type = header("content-type").join(",");
    let warnings = header("warning");
    let bytes = res.into_body().collect_bytes().await.expect("body");
    let body = serde_json::from_slice(&bytes).expect("a JSON answer");
    Answer { code, content_type, warnings, body }
}

#[tokio::test]
async fn raw_protobuf_requests() {
    let server = Server::start(Config::default()).await.expect("server");
    let client =
        kruise_sim::nodes::client_from_kubeconfig(&server.kubeconfig).await.expect("client");

    // Created, answered in JSON although protobuf is listed first in Accept.
    let a = post(&client, "/api/v1/namespaces", NAMESPACE_BODY.to_vec()).await;
    assert_eq!(a.code, 201, "{}", a.body);
    assert_eq!(a.content_type, "application/json");
    assert_eq!(a.body["metadata"]["name"], "prod");
    assert_eq!(a.body["status"]["phase"], "Active");
    assert!(a.warnings.is_empty(), "{:?}", a.warnings);

    // A kind without a protobuf schema: 415 naming it.
    let a = post(
        &client,
        "/apis/apps/v1/namespaces/default/statefulsets",
        envelope("apps/v1", "StatefulSet", &ld(1, &ld(1, b"s"))),
    )
    .await;
    assert_eq!((a.code, a.body["reason"].as_str()), (415, Some("UnsupportedMediaType")));
    let msg = a.body["message"].as_str().unwrap_or_default();
    assert!(msg.contains("StatefulSet (apps/v1)"), "{msg}");

    // Truncated inside the object (field 2 of the envelope, at byte 21): 400 naming the place.
    let cut = NAMESPACE_BODY[..NAMESPACE_BODY.len() - 8].to_vec();
    let a = post(&client, "/api/v1/namespaces", cut).await;
    assert_eq!((a.code, a.body["reason"].as_str()), (400, Some("BadRequest")));
    let msg = a.body["message"].as_str().unwrap_or_default();
    assert_eq!(
        msg,
        "failed to decode protobuf runtime.Unknown at <root> (byte 21): unexpected EOF: \
         length-delimited field of 28 bytes, 24 left"
    );
    // Malformed inside the object: the path within it.
    let bad_meta = [ld(1, &[0x0a, 0x05, b'a'])].concat(); // metadata.name: 5 bytes, 1 present
    let a = post(&client, "/api/v1/namespaces", envelope("v1", "Namespace", &bad_meta)).await;
    assert_eq!(a.code, 400);
    let msg = a.body["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with("failed to decode protobuf Namespace at metadata (byte 25)"), "{msg}");

    // No magic prefix.
    let a = post(&client, "/api/v1/namespaces", br#"{"kind":"Namespace"}"#.to_vec()).await;
    assert_eq!(a.code, 400);
    let msg = a.body["message"].as_str().unwrap_or_default();
    assert!(msg.contains("expected prefix [107 56 115 0]"), "{msg}");

    // A field the decoder does not know, carrying data: created, with a warning naming it.
    let container = [ld(1, b"c"), ld(2, b"busybox")].concat();
    let affinity = ld(1, &ld(1, b"x")); // PodSpec field 18 (affinity), not decoded
    let spec = [ld(2, &container), ld(18, &affinity)].concat();
    let pod = [ld(1, &ld(1, b"p")), ld(2, &spec)].concat();
    let a = post(&client, "/api/v1/namespaces/default/pods", envelope("v1", "Pod", &pod)).await;
    assert_eq!(a.code, 201, "{}", a.body);
    assert_eq!(a.body["spec"]["containers"][0]["image"], "busybox");
    assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
    assert!(
        a.warnings[0].contains("field 18 (length-delimited) of PodSpec at spec"),
        "{:?}",
        a.warnings
    );
    server.shutdown();
}
