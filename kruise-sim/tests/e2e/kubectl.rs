//! The real kubectl against an in-process kruise-sim.

use crate::common;

use common::Env;
use kruise_sim::Config;
use std::time::Duration;

const DEPLOY: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        env:
        - {name: A, value: "1"}
"#;

#[test]
fn discovery_and_health() {
    let env = Env::new(Config::default());
    let v = env.ok(&["version", "-o", "json"]);
    assert!(v.contains("v1.32.0-kruise-sim"), "{v}");
    let res = env.ok(&["api-resources"]);
    for want in
        ["deployments", "leases", "poddisruptionbudgets", "customresourcedefinitions", "cronjobs"]
    {
        assert!(res.contains(want), "{want} missing from:\n{res}");
    }
    assert_eq!(env.ok(&["get", "--raw", "/readyz"]), "ok");
    let ns = env.ok(&["get", "ns", "-o", "name"]);
    assert!(ns.contains("namespace/default") && ns.contains("namespace/kube-system"), "{ns}");
}

#[test]
fn create_apply_get_and_errors() {
    let env = Env::new(Config::default());
    assert!(env.ok_stdin(&["apply", "-f", "-"], DEPLOY).contains("deployment.apps/web created"));
    assert!(env.ok_stdin(&["apply", "-f", "-"], DEPLOY).contains("unchanged"));
    let d = env.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(d["metadata"]["uid"].as_str().map(str::len), Some(36));
    assert!(d["metadata"]["creationTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
    let rv1: u64 =
        d["metadata"]["resourceVersion"].as_str().and_then(|r| r.parse().ok()).expect("rv");
    // Defaults filled by the server.
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(d["status"], serde_json::json!({}));

    let changed = DEPLOY.replace("replicas: 2", "replicas: 3");
    assert!(env.ok_stdin(&["apply", "-f", "-"], &changed).contains("configured"));
    let d = env.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["generation"], 2);
    assert_eq!(d["spec"]["replicas"], 3);
    let rv2: u64 =
        d["metadata"]["resourceVersion"].as_str().and_then(|r| r.parse().ok()).expect("rv");
    assert!(rv2 > rv1);

    // Table columns of a built-in kind.
    let table = env.ok(&["get", "deploy"]);
    assert!(table.starts_with("NAME   READY   UP-TO-DATE   AVAILABLE   AGE"), "{table}");
    assert!(table.contains("web    0/3"), "{table}");

    // Errors as the real server words them.
    let e = env.fails(&["get", "deploy", "nope"]);
    assert!(
        e.contains(r#"Error from server (NotFound): deployments.apps "nope" not found"#),
        "{e}"
    );
    let e = env.run_with(&["create", "-f", "-"], Some(DEPLOY), Duration::from_secs(20)).stderr;
    assert!(e.contains(r#"Error from server (AlreadyExists): error when creating "STDIN": deployments.apps "web" already exists"#), "{e}");
    let e = env.fails(&["get", "pods", "--field-selector", "spec.foo=1"]);
    assert!(e.contains("field label not supported: spec.foo"), "{e}");

    // generateName.
    let generated =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\ndata: {a: b}\n";
    let out = env.ok_stdin(&["create", "-f", "-", "-o", "name"], generated);
    assert!(
        out.trim().starts_with("configmap/gen-") && out.trim().len() == "configmap/gen-".len() + 5,
        "{out}"
    );

    // Invalid object: 422 with the field error.
    let bad_pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: []\n";
    let e = env.run_with(&["create", "-f", "-"], Some(bad_pod), Duration::from_secs(20)).stderr;
    assert!(e.contains(r#"Pod "p" is invalid: spec.containers: Required value"#), "{e}");
}

#[test]
fn conflict_on_stale_update() {
    let env = Env::new(Config::default());
    env.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {a: '1'}\n",
    );
    let stale = env.ok(&["get", "cm", "c", "-o", "json"]);
    env.ok(&["patch", "cm", "c", "--type", "merge", "-p", r#"{"data":{"a":"2"}}"#]);
    let o = env.run_with(&["replace", "-f", "-"], Some(&stale), Duration::from_secs(20));
    assert!(!o.ok);
    assert!(
        o.stderr.contains(r#"Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your changes to the latest version and try again"#),
        "{}",
        o.stderr
    );
}

#[test]
fn patches_of_each_type() {
    let env = Env::new(Config::default());
    env.ok_stdin(&["apply", "-f", "-"], DEPLOY);
    env.ok(&[
        "patch", "deploy", "web", "--type", "strategic", "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"B","value":"2"}]}]}}}}"#,
    ]);
    let d = env.json(&["get", "deploy", "web"]);
    let env_names: Vec<&str> = d["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(env_names, vec!["B", "A"], "strategic merge keeps A and adds B");
    env.ok(&[
        "patch",
        "deploy",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"labels":{"m":"1"}}}"#,
    ]);
    env.ok(&[
        "patch",
        "deploy",
        "web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":7}]"#,
    ]);
    let d = env.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["labels"]["m"], "1");
    assert_eq!(d["spec"]["replicas"], 7);
    let e = env.fails(&[
        "patch",
        "deploy",
        "web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":1}]"#,
    ]);
    assert!(e.contains("the server rejected our request due to an error in our request"), "{e}");
    // kubectl label / annotate go through patches too.
    env.ok(&["label", "deploy", "web", "tier=front"]);
    assert!(
        env.ok(&["get", "deploy", "-l", "tier=front", "-o", "name"])
            .contains("deployment.apps/web")
    );
}

#[test]
fn selectors_and_paging() {
    let env = Env::new(Config::default());
    for i in 0..5 {
        let tier = if i % 2 == 0 { "even" } else { "odd" };
        let m = format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\n  labels: {{tier: {tier}}}\nspec:\n  containers: [{{name: c, image: busybox}}]\n"
        );
        env.ok_stdin(&["create", "-f", "-"], &m);
    }
    let even = env.ok(&["get", "pods", "-l", "tier=even", "-o", "name"]);
    assert_eq!(even.lines().count(), 3, "{even}");
    let notin = env.ok(&["get", "pods", "-l", "tier notin (even)", "-o", "name"]);
    assert_eq!(notin.lines().count(), 2, "{notin}");
    let by_name = env.ok(&["get", "pods", "--field-selector", "metadata.name=p3", "-o", "name"]);
    assert_eq!(by_name.trim(), "pod/p3");
    let pending =
        env.ok(&["get", "pods", "--field-selector", "status.phase=Pending", "-o", "name"]);
    assert_eq!(pending.lines().count(), 5);
    let none = env.run(&["get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "name"]);
    assert!(none.ok && none.stdout.trim().is_empty());
    // Paging: kubectl follows continue tokens.
    let paged = env.ok(&["get", "pods", "--chunk-size", "2", "-o", "name"]);
    assert_eq!(paged.lines().count(), 5, "{paged}");
    let raw = env.ok(&["get", "--raw", "/api/v1/namespaces/default/pods?limit=2"]);
    let v: serde_json::Value = serde_json::from_str(&raw).expect("json");
    assert_eq!(v["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["metadata"]["remainingItemCount"], 3);
    assert!(v["metadata"]["continue"].is_string());
}

/// A page with a selector reads on past objects that do not match, however many: here the
/// first 520 do not, and the store hands them out in chunks of 512.
#[test]
fn a_selector_page_reads_past_many_objects_that_do_not_match() {
    let env = Env::new(Config::default());
    let mut items: Vec<serde_json::Value> = (0..520)
        .map(|i| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("a-{i:03}")}})
        })
        .collect();
    items.extend((0..3).map(|i| {
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("z-{i}"), "labels": {"pick": "yes"}}})
    }));
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    env.ok_stdin(&["create", "-f", "-"], &list.to_string());
    let path = "/api/v1/namespaces/default/configmaps?labelSelector=pick%3Dyes&limit=2";
    let first: serde_json::Value =
        serde_json::from_str(&env.ok(&["get", "--raw", path])).expect("json");
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(names(&first), ["z-0", "z-1"]);
    assert!(first["metadata"].get("remainingItemCount").is_none(), "{first}");
    let token = first["metadata"]["continue"].as_str().expect("continue").to_owned();
    let next: serde_json::Value =
        serde_json::from_str(&env.ok(&["get", "--raw", &format!("{path}&continue={token}")]))
            .expect("json");
    assert_eq!(names(&next), ["z-2"]);
    assert!(next["metadata"].get("continue").is_none_or(|c| c == ""), "{next}");
    let all = env.ok(&["get", "configmaps", "--chunk-size", "100", "-o", "name"]);
    // kube-root-ca.crt is there too.
    assert_eq!(all.lines().count(), 524, "{all}");
}

#[test]
fn watch_streams_events() {
    let env = Env::new(Config::default());
    let watcher = {
        let cmd_env = (env.kubeconfig.clone(), env.dir.path().to_path_buf());
        std::thread::spawn(move || {
            let out = std::process::Command::new(common::KUBECTL)
                .arg("--kubeconfig")
                .arg(&cmd_env.0)
                .arg("--cache-dir")
                .arg(cmd_env.1.join("cache-w"))
                .args([
                    "get",
                    "cm",
                    "-w",
                    // Every namespace also holds kube-root-ca.crt, as in a real cluster.
                    "--field-selector",
                    "metadata.name=w",
                    "--output-watch-events",
                    "-o",
                    "json",
                    "--request-timeout",
                    "4s",
                ])
                .env("HOME", &cmd_env.1)
                .output()
                .expect("kubectl watch");
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    };
    std::thread::sleep(Duration::from_millis(1200));
    env.ok_stdin(&["create", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n");
    env.ok(&["patch", "cm", "w", "--type", "merge", "-p", r#"{"data":{"k":"v"}}"#]);
    env.ok(&["delete", "cm", "w"]);
    let out = watcher.join().expect("watch thread");
    let types: Vec<String> = serde_json::Deserializer::from_str(&out)
        .into_iter::<serde_json::Value>()
        .filter_map(|v| v.ok())
        .filter_map(|v| v["type"].as_str().map(str::to_string))
        .collect();
    assert_eq!(types, vec!["ADDED", "MODIFIED", "DELETED"], "{out}");
}

#[test]
fn bad_input_keeps_serving() {
    let env = Env::new(Config::default());
    let bad = env.dir.path().join("bad.json");
    std::fs::write(&bad, "{not json").expect("write");
    let e = env.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps",
        "-f",
        bad.to_str().expect("path"),
    ]);
    assert!(e.contains("couldn't get version/kind; json parse error"), "{e}");
    let e = env.fails(&["get", "--raw", "/apis/nope.example.com/v1/things"]);
    assert!(e.contains("NotFound"), "{e}");
    let e = env.fails(&["get", "pods", "-l", "a in b"]);
    assert!(e.contains("unable to parse requirement: found 'b' expected: '('"), "{e}");
    // Still serving.
    assert_eq!(env.ok(&["get", "--raw", "/healthz"]), "ok");
    env.ok(&["get", "pods"]);
}

#[test]
fn namespace_deletion_removes_contents() {
    let env = Env::new(Config::default());
    env.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: tmp\n",
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    env.ok_stdin(&["create", "-n", "tmp", "-f", "-"], cm);
    let e = env
        .run_with(&["create", "-n", "missing", "-f", "-"], Some(cm), Duration::from_secs(20))
        .stderr;
    assert!(e.contains(r#"namespaces "missing" not found"#), "{e}");
    env.ok(&["delete", "ns", "tmp", "--wait=false"]);
    let o = env.run(&["get", "ns", "tmp"]);
    assert!(!o.ok && o.stderr.contains(r#"namespaces "tmp" not found"#), "{}", o.stderr);
}

/// A Secret's `stringData` is written into `data`, base64-encoded and over an entry of the
/// same key, and is not stored itself.
#[test]
fn secret_string_data_moves_into_data() {
    let env = Env::new(Config::default());
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Secret
metadata: {name: creds}
data: {user: b2xk, keep: a2VlcA==}
stringData: {user: admin, token: s3cr3t}
"#,
    );
    let secret = env.json(&["get", "secret", "creds"]);
    assert_eq!(
        secret["data"],
        serde_json::json!({"user": "YWRtaW4=", "keep": "a2VlcA==", "token": "czNjcjN0"}),
        "{secret}"
    );
    assert!(secret.get("stringData").is_none(), "{secret}");
    assert_eq!(secret["type"], "Opaque");
}

/// Pods and workload templates are validated as kube-apiserver validates them.
#[test]
fn pod_specs_are_validated() {
    let env = Env::new(Config::default());
    let err = env.fails_stdin(
        &["create", "-f", "-"],
        r#"
apiVersion: v1
kind: Pod
metadata: {name: dup}
spec:
  containers: [{name: a, image: nginx}, {name: a, image: nginx}]
"#,
    );
    assert!(
        err.contains(r#"The Pod "dup" is invalid: spec.containers[1].name: Duplicate value: "a""#),
        "{err}"
    );
    let err = env.fails_stdin(
        &["create", "-f", "-"],
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, volumeMounts: [{name: data, mountPath: /d}]}]
"#,
    );
    assert!(
        err.contains(r#"The Deployment "web" is invalid: spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data""#),
        "{err}"
    );
}

/// An immutable ConfigMap keeps its data and its flag.
#[test]
fn immutable_config_maps_refuse_changes() {
    let env = Env::new(Config::default());
    env.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fixed}\ndata: {a: \"1\"}\nimmutable: true\n",
    );
    let err = env.fails(&[
        "patch",
        "configmap",
        "fixed",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"a":"2"}}"#,
    ]);
    assert!(
        err.contains("The ConfigMap \"fixed\" is invalid: data: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );
    let err = env.fails(&[
        "patch",
        "configmap",
        "fixed",
        "--type",
        "merge",
        "-p",
        r#"{"immutable":false}"#,
    ]);
    assert!(
        err.contains("immutable: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );
    env.ok(&["label", "configmap", "fixed", "x=y"]);
}

/// A JSON patch whose `test` fails is refused as kube-apiserver refuses it.
#[test]
fn a_failed_json_patch_test_is_a_generic_422() {
    let env = Env::new(Config::default());
    env.ok(&["create", "configmap", "c", "--from-literal=a=1"]);
    let err = env.fails(&[
        "patch",
        "configmap",
        "c",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/a","value":"2"},{"op":"replace","path":"/data/a","value":"3"}]"#,
    ]);
    assert!(
        err.contains("the server rejected our request due to an error in our request"),
        "{err}"
    );
    assert_eq!(env.ok(&["get", "configmap", "c", "-o", "jsonpath={.data.a}"]), "1");
    let raw = env.run_with(
        &[
            "patch",
            "configmap",
            "c",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/data/a","value":"2"}]"#,
            "-v=8",
        ],
        None,
        Duration::from_secs(30),
    );
    assert!(raw.stderr.contains("Response Status: 422 Unprocessable Entity"), "{}", raw.stderr);
    assert!(raw.stderr.contains(r#"\"reason\":\"Invalid\""#), "{}", raw.stderr);
}

/// `kubectl create token` and `kubectl auth can-i`, answered from the RBAC objects: a
/// service account may do what its bindings allow and nothing else, with kube-apiserver's
/// Forbidden message.
#[test]
fn service_account_tokens_and_rbac() {
    let env = Env::new(Config::default());
    env.ok(&["create", "serviceaccount", "bot"]);
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader, namespace: default}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bot-reads-pods, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-reader}
subjects:
- {kind: ServiceAccount, name: bot, namespace: default}
"#,
    );
    let sa = "system:serviceaccount:default:bot";
    assert_eq!(env.ok(&["auth", "can-i", "list", "pods", "--as", sa]).trim(), "yes");
    let no = env.run(&["auth", "can-i", "delete", "pods", "--as", sa]);
    assert_eq!((no.ok, no.stdout.trim()), (false, "no"), "{}", no.stderr);
    assert_eq!(env.ok(&["auth", "can-i", "delete", "pods"]).trim(), "yes", "the admin may");

    let token = env.ok(&["create", "token", "bot"]);
    let token = token.trim();
    assert!(!token.is_empty());
    env.ok(&["get", "pods", "--token", token]);
    let err = env.fails(&["get", "configmaps", "--token", token]);
    assert!(
        err.contains(r#"configmaps is forbidden: User "system:serviceaccount:default:bot" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{err}"
    );
    let err = env.fails(&["create", "token", "nobody"]);
    assert!(err.contains(r#"serviceaccounts "nobody" not found"#), "{err}");
}

/// `kubectl create token` gives a signed JWT with kube-apiserver's claims; a TokenReview
/// reads it back (audiences, the bound pod, expiry, invalidation) in kube-apiserver 1.36.2's
/// words, and `kubectl auth whoami` names the caller.
#[test]
fn tokens_are_signed_jwts_that_token_reviews_read() {
    use base64::Engine as _;
    use serde_json::Value;
    let env = Env::new(Config::default());
    env.ok(&["create", "serviceaccount", "bot"]);
    env.ok(&["run", "p", "--image=nginx"]);
    let pod_uid = env.ok(&["get", "pod", "p", "-o", "jsonpath={.metadata.uid}"]);
    let bound = ["--bound-object-kind", "Pod", "--bound-object-name", "p"];
    let token = env.ok(&[
        &["create", "token", "bot", "--audience", "aud1", "--bound-object-uid", &pod_uid][..],
        &bound[..],
    ]
    .concat());
    let token = token.trim();
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWS in compact form: {token}");
    let decode = |part: &str| -> Value {
        let bytes =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).expect("base64url");
        serde_json::from_slice(&bytes).expect("JSON")
    };
    assert!(decode(parts[0])["kid"].is_string());
    let claims = decode(parts[1]);
    assert_eq!(claims["sub"], "system:serviceaccount:default:bot");
    assert_eq!(claims["aud"], serde_json::json!(["aud1"]));
    assert_eq!(claims["iss"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(claims["kubernetes.io"]["pod"]["uid"], pod_uid.as_str());
    assert_eq!(claims["exp"].as_i64().zip(claims["iat"].as_i64()).map(|(e, i)| e - i), Some(3600));

    let review = |audiences: &str| -> Value {
        let body = format!(
            r#"{{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{{"token":"{token}"{audiences}}}}}"#
        );
        let out = env.ok_stdin(&["create", "-f", "-", "-o", "json"], &body);
        serde_json::from_str::<Value>(&out).expect("JSON")["status"].clone()
    };
    let ok = review(r#","audiences":["aud1","other"]"#);
    assert_eq!(
        (ok["authenticated"].as_bool(), &ok["audiences"]),
        (Some(true), &serde_json::json!(["aud1"]))
    );
    assert_eq!(ok["user"]["username"], "system:serviceaccount:default:bot");
    assert_eq!(
        ok["user"]["extra"]["authentication.kubernetes.io/pod-name"],
        serde_json::json!(["p"])
    );
    assert_eq!(
        review("")["error"],
        r#"[invalid bearer token, token audiences ["aud1"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]]"#
    );
    let err = env.fails(
        &[
            &[
                "create",
                "token",
                "bot",
                "--bound-object-uid",
                "11111111-1111-1111-1111-111111111111",
            ][..],
            &bound[..],
        ]
        .concat(),
    );
    assert!(
        err.contains(r#"Operation cannot be fulfilled on Pod "p": the UID in the bound object reference (11111111-1111-1111-1111-111111111111) does not match the UID in record. The object might have been deleted and then recreated"#),
        "{err}"
    );
    env.ok(&["delete", "pod", "p", "--grace-period=0", "--force"]);
    assert_eq!(
        review(r#","audiences":["aud1"]"#)["error"],
        "[invalid bearer token, service account token has been invalidated]"
    );
    let whoami = env.ok(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    assert_eq!(whoami, "kubernetes-admin");
}

/// A new namespace gets its `default` ServiceAccount and `kube-root-ca.crt`; a pod gets the
/// service account token volume, and one naming a missing service account is refused.
#[test]
fn pods_pass_service_account_admission() {
    let env = Env::new(Config::default());
    env.ok(&["create", "namespace", "team"]);
    assert_eq!(env.ok(&["get", "sa", "-n", "team", "-o", "name"]).trim(), "serviceaccount/default");
    let ca =
        env.ok(&["get", "cm", "kube-root-ca.crt", "-n", "team", "-o", "jsonpath={.data.ca\\.crt}"]);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    env.ok(&["run", "web", "-n", "team", "--image", "nginx"]);
    let pod = env.json(&["get", "pod", "web", "-n", "team"]);
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
    let volume = &pod["spec"]["volumes"][0];
    assert!(volume["name"].as_str().is_some_and(|n| n.starts_with("kube-api-access-")), "{volume}");
    assert_eq!(volume["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"], 3607);
    assert_eq!(
        pod["spec"]["containers"][0]["volumeMounts"][0]["mountPath"],
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    let err = env.fails_stdin(
        &["create", "-n", "team", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: lost}\nspec:\n  serviceAccountName: ghost\n  containers: [{name: c, image: nginx}]\n",
    );
    assert!(
        err.contains(r#"pods "lost" is forbidden: error looking up service account team/ghost: serviceaccount "ghost" not found"#),
        "{err}"
    );
}

/// A pod update may change only what Kubernetes lets change.
#[test]
fn pod_updates_are_validated() {
    let env = Env::new(Config::default());
    env.ok(&["run", "p1", "--image", "nginx"]);
    let err = env.fails(&[
        "patch",
        "pod",
        "p1",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/spec/containers/-","value":{"name":"extra","image":"busybox"}}]"#,
    ]);
    assert!(
        err.contains(r#"The Pod "p1" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"#),
        "{err}"
    );
    let err = env.fails(&[
        "patch",
        "pod",
        "p1",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/spec/containers/0/env","value":[{"name":"A","value":"1"}]}]"#,
    ]);
    assert!(err.contains("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"), "{err}");
    let generation =
        |env: &Env| env.ok(&["get", "pod", "p1", "-o", "jsonpath={.metadata.generation}"]);
    // A pod's generation (kube-apiserver 1.33+) starts at 1, whatever the client sent, and
    // counts changes of its spec only: refused updates, metadata and status leave it.
    assert_eq!(generation(&env), "1");
    let patch_status = |type_: &str, patch: &str| {
        env.ok(&["patch", "pod", "p1", "--subresource", "status", "--type", type_, "-p", patch])
    };
    env.ok(&["label", "pod", "p1", "a=b"]);
    patch_status("merge", r#"{"status":{"observedGeneration":1}}"#);
    assert_eq!(generation(&env), "1");
    env.ok(&["set", "image", "pod/p1", "p1=nginx:2"]);
    assert_eq!(
        env.ok(&["get", "pod", "p1", "-o", "jsonpath={.spec.containers[0].image}"]),
        "nginx:2"
    );
    assert_eq!(generation(&env), "2");
    // A status write without observedGeneration keeps the one stored.
    patch_status("json", r#"[{"op":"remove","path":"/status/observedGeneration"}]"#);
    assert_eq!(env.ok(&["get", "pod", "p1", "-o", "jsonpath={.status.observedGeneration}"]), "1");
    env.ok_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p2, generation: 7}\nspec: {containers: [{name: c, image: nginx}]}\n",
    );
    assert_eq!(env.ok(&["get", "pod", "p2", "-o", "jsonpath={.metadata.generation}"]), "1");
}

/// Services get what kube-apiserver's Service storage assigns: an address from the service
/// range with its families, node ports, and both kept through an update that leaves them out.
#[test]
fn services_get_addresses_and_node_ports() {
    let env = Env::new(Config::default());
    env.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let web = env.json(&["get", "service", "web"]);
    let ip = web["spec"]["clusterIP"].as_str().unwrap_or_default().to_owned();
    assert!(ip.starts_with("10.96."), "{web}");
    assert_eq!(web["spec"]["clusterIPs"], serde_json::json!([ip.clone()]));
    assert_eq!(web["spec"]["ipFamilies"], serde_json::json!(["IPv4"]));
    assert_eq!(web["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(web["spec"]["internalTrafficPolicy"], "Cluster");
    let table = env.ok(&["get", "service", "web"]);
    assert!(table.contains(&ip), "{table}");
    // A second Service may not take the address.
    let taken = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: copy}}\nspec: {{clusterIP: {ip}, ports: [{{port: 80}}]}}\n"
    );
    let e = env.fails_stdin(&["create", "-f", "-"], &taken);
    assert!(
        e.contains(&format!(
            r#"The Service "copy" is invalid: spec.clusterIPs: Invalid value: ["{ip}"]: failed to allocate IP {ip}: provided IP is already allocated"#
        )),
        "{e}"
    );
    env.ok(&["create", "service", "clusterip", "none", "--clusterip=None"]);
    assert_eq!(
        env.ok(&["get", "service", "none", "-o", "jsonpath={.spec.clusterIPs}"]),
        r#"["None"]"#
    );
    env.ok(&["create", "service", "nodeport", "np", "--tcp=80:8080"]);
    let np = env.json(&["get", "service", "np"]);
    let port = np["spec"]["ports"][0]["nodePort"].as_i64().unwrap_or_default();
    assert!((30000..=32767).contains(&port), "{np}");
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    // A replace without them keeps the address and the node port.
    let mut body = np.clone();
    if let Some(spec) = body["spec"].as_object_mut() {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    if let Some(port) = body["spec"]["ports"][0].as_object_mut() {
        port.remove("nodePort");
    }
    env.ok_stdin(&["replace", "-f", "-"], &body.to_string());
    let after = env.json(&["get", "service", "np"]);
    assert_eq!(after["spec"]["clusterIP"], np["spec"]["clusterIP"]);
    assert_eq!(after["spec"]["ports"][0]["nodePort"], port);
    let e = env.fails(&[
        "patch",
        "service",
        "web",
        "-p",
        r#"{"spec":{"clusterIP":"10.96.0.77","clusterIPs":["10.96.0.77"]}}"#,
    ]);
    assert!(
        e.contains(r#"The Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.77"]: may not change once set"#),
        "{e}"
    );
}
