//! `networking.k8s.io/v1` Ingresses and IngressClasses as kube-apiserver 1.36 serves them:
//! a controller's create, patch, get, list, watch, status and delete through kube-rs; the
//! real kubectl's `get` columns and discovery; the validation refusals with kube-apiserver's
//! messages; and the default IngressClass given to an Ingress that names none.

use crate::common::{self, Env};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kruise_sim::{Config, Server};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use std::time::Duration;

const T: Duration = Duration::from_secs(10);

/// An Ingress `name` routing `host`/ to Service `web` port 80, in JSON.
fn ingress_json(name: &str, host: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name},
        "spec": {"rules": [{"host": host, "http": {"paths": [{
            "path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}
        }]}}]}
    })
}

#[tokio::test]
async fn a_controller_creates_patches_lists_watches_and_deletes_ingresses() {
    let server = Server::start(Config::default()).await.expect("server");
    let client = common::client(&server).await;
    let api: Api<Ingress> = Api::namespaced(client.clone(), "default");

    let list = api.list(&ListParams::default()).await.expect("list");
    let rv0 = list.metadata.resource_version.clone().unwrap_or_default();
    let mut events =
        api.watch(&WatchParams::default().timeout(10), &rv0).await.expect("watch").boxed();

    let body: Ingress =
        serde_json::from_value(ingress_json("web", "foo.example.com")).expect("ingress");
    let created = api.create(&PostParams::default(), &body).await.expect("create");
    assert_eq!(created.metadata.generation, Some(1));
    let status = serde_json::to_value(&created.status).expect("status");
    assert_eq!(status, json!({"loadBalancer": {}}));
    assert_eq!(created.spec.as_ref().and_then(|s| s.ingress_class_name.clone()), None);

    // A spec patch bumps the generation; a status write from the spec path is dropped.
    let patch = json!({"spec": {"ingressClassName": "nginx"},
        "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}});
    let patched =
        api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("patch");
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(patched.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()), Some("nginx"));
    assert_eq!(serde_json::to_value(&patched.status).expect("status"), json!({"loadBalancer": {}}));

    // The controller reports its address through the status subresource.
    let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}, {"hostname": "lb.example.com"}]}}});
    let reported = api
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status patch");
    assert_eq!(reported.metadata.generation, Some(2), "a status write keeps the generation");
    let got = api.get("web").await.expect("get");
    let lb = got.status.and_then(|s| s.load_balancer).and_then(|l| l.ingress).unwrap_or_default();
    assert_eq!(lb.len(), 2);
    assert_eq!(lb[0].ip.as_deref(), Some("10.0.0.9"));
    let bad_status = json!({"status": {"loadBalancer": {"ingress": [{"ip": "not-an-ip"}]}}});
    match api.patch_status("web", &PatchParams::default(), &Patch::Merge(&bad_status)).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"));
            assert_eq!(
                s.message,
                r#"Ingress.networking.k8s.io "web" is invalid: status.loadBalancer.ingress[0].ip: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#
            );
        }
        other => panic!("expected a 422, got {other:?}"),
    }

    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|i| i.metadata.name)
        .collect();
    assert_eq!(names, ["web"]);

    api.delete("web", &DeleteParams::default()).await.expect("delete");
    match api.get("web").await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.message, r#"ingresses.networking.k8s.io "web" not found"#);
        }
        other => panic!("expected a 404, got {other:?}"),
    }

    let mut seen = Vec::new();
    while seen.len() < 4 {
        let event = tokio::time::timeout(T, events.try_next()).await.expect("event in time");
        match event.expect("watch ok").expect("watch open") {
            WatchEvent::Added(_) => seen.push("ADDED"),
            WatchEvent::Modified(_) => seen.push("MODIFIED"),
            WatchEvent::Deleted(_) => seen.push("DELETED"),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
        }
    }
    assert_eq!(seen, ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn a_new_ingress_gets_the_newest_default_class() {
    let server = Server::start(Config::default()).await.expect("server");
    let client = common::client(&server).await;
    let classes: Api<IngressClass> = Api::all(client.clone());
    let class = |name: &str, default: bool| -> IngressClass {
        let mut c =
            json!({"metadata": {"name": name}, "spec": {"controller": "example.com/ingress"}});
        if default {
            c["metadata"]["annotations"] =
                json!({"ingressclass.kubernetes.io/is-default-class": "true"});
        }
        serde_json::from_value(c).expect("class")
    };
    let api: Api<Ingress> = Api::namespaced(client, "default");
    let post = PostParams::default();
    let first: Ingress =
        serde_json::from_value(ingress_json("before", "a.example.com")).expect("ingress");
    let before = api.create(&post, &first).await.expect("create");
    assert_eq!(before.spec.and_then(|s| s.ingress_class_name), None, "no default class yet");

    classes.create(&post, &class("plain", false)).await.expect("class");
    let created = classes.create(&post, &class("public", true)).await.expect("class");
    assert_eq!(created.metadata.generation, Some(1));
    let second: Ingress =
        serde_json::from_value(ingress_json("after", "b.example.com")).expect("ingress");
    let after = api.create(&post, &second).await.expect("create");
    assert_eq!(after.spec.and_then(|s| s.ingress_class_name).as_deref(), Some("public"));

    // Server-side apply of a new Ingress is admitted the same way.
    let applied = api
        .patch(
            "applied",
            &PatchParams::apply("test"),
            &Patch::Apply(ingress_json("applied", "c.example.com")),
        )
        .await
        .expect("apply");
    assert_eq!(applied.spec.and_then(|s| s.ingress_class_name).as_deref(), Some("public"));

    // One named by the deprecated annotation keeps it, with kube-apiserver's warning left to
    // the client; an explicit class is kept.
    let mut annotated = ingress_json("annotated", "d.example.com");
    annotated["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "legacy"});
    let annotated: Ingress = serde_json::from_value(annotated).expect("ingress");
    let kept = api.create(&post, &annotated).await.expect("create");
    assert_eq!(kept.spec.and_then(|s| s.ingress_class_name), None);

    // The controller of a class cannot change.
    let patch = json!({"spec": {"controller": "example.com/other"}});
    match classes.patch("public", &PatchParams::default(), &Patch::Merge(&patch)).await {
        Err(kube::Error::Api(s)) => assert_eq!(
            s.message,
            r#"IngressClass.networking.k8s.io "public" is invalid: spec.controller: Invalid value: "example.com/other": field is immutable"#
        ),
        other => panic!("expected a 422, got {other:?}"),
    }
}

const INGRESS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  ingressClassName: nginx
  tls:
  - hosts: [foo.example.com]
    secretName: web-tls
  rules:
  - host: foo.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: web
            port:
              number: 80
  - host: bar.example.com
    http:
      paths:
      - path: /api
        pathType: Exact
        backend:
          service:
            name: api
            port:
              name: http
"#;

#[test]
fn kubectl_gets_ingresses_and_classes_with_kube_apiservers_columns() {
    let env = Env::new(Config::default());
    let resources = env.ok(&["api-resources", "--api-group=networking.k8s.io"]);
    let line = |name: &str| -> Vec<String> {
        resources
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        line("ingresses"),
        ["ingresses", "ing", "networking.k8s.io/v1", "true", "Ingress"],
        "{resources}"
    );
    assert_eq!(
        line("ingressclasses"),
        ["ingressclasses", "networking.k8s.io/v1", "false", "IngressClass"],
        "{resources}"
    );

    assert!(
        env.ok_stdin(&["apply", "-f", "-"], INGRESS)
            .contains("ingress.networking.k8s.io/web created")
    );
    assert!(env.ok_stdin(&["apply", "-f", "-"], INGRESS).contains("unchanged"));
    let table = env.ok(&["get", "ing"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"], "{table}");
    let row = lines.next().unwrap_or_default();
    assert!(row.starts_with("web "), "{table}");
    assert!(
        row.contains(" nginx ") && row.contains(" foo.example.com,bar.example.com "),
        "{table}"
    );
    assert!(row.contains(" 80, 443 "), "{table}");

    let status = r#"{"status":{"loadBalancer":{"ingress":[{"ip":"10.0.0.2"},{"ip":"10.0.0.1"}]}}}"#;
    env.ok(&["patch", "ingress", "web", "--subresource=status", "--type=merge", "-p", status]);
    let row = env.ok(&["get", "ingress", "web", "--no-headers"]);
    assert!(row.contains(" 10.0.0.1,10.0.0.2 "), "{row}");

    let no_class = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: catch-all
spec:
  defaultBackend:
    service:
      name: web
      port:
        number: 80
"#;
    env.ok_stdin(&["apply", "-f", "-"], no_class);
    let row = env.ok(&["get", "ingress", "catch-all", "--no-headers"]);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..4], ["catch-all", "<none>", "*", "80"], "{row}");

    let classes = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: nginx
  annotations:
    ingressclass.kubernetes.io/is-default-class: "true"
spec:
  controller: k8s.io/ingress-nginx
  parameters:
    apiGroup: k8s.example.com
    kind: IngressParameters
    name: external-lb
    scope: Cluster
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: plain
spec:
  controller: example.com/ingress
"#;
    env.ok_stdin(&["apply", "-f", "-"], classes);
    let table = env.ok(&["get", "ingressclass"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "CONTROLLER", "PARAMETERS", "AGE"], "{table}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        &rows[0][..4],
        [
            "nginx",
            "(default)",
            "k8s.io/ingress-nginx",
            "IngressParameters.k8s.example.com/external-lb"
        ],
        "{table}"
    );
    assert_eq!(&rows[1][..3], ["plain", "example.com/ingress", "<none>"], "{table}");

    // kubectl's generator (which sends protobuf).
    let out = env.ok(&["create", "ingress", "simple", "--rule=foo.com/bar*=svc1:8080,tls=my-cert"]);
    assert!(out.contains("ingress.networking.k8s.io/simple created"), "{out}");
    let simple = env.json(&["get", "ingress", "simple"]);
    assert_eq!(
        simple["spec"],
        json!({"ingressClassName": "nginx", "rules": [{"host": "foo.com", "http": {"paths": [{
            "path": "/bar", "pathType": "Prefix",
            "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}]}}],
            "tls": [{"hosts": ["foo.com"], "secretName": "my-cert"}]}),
        "the default class is given"
    );

    env.ok(&["delete", "ingress", "web", "catch-all", "simple"]);
    assert!(env.ok(&["get", "ingress"]).is_empty());
}

/// An Ingress with one path, whose `path` lines are replaced by `path_lines`.
fn one_path(name: &str, path_lines: &str) -> String {
    format!(
        r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {name}
spec:
  rules:
  - host: foo.example.com
    http:
      paths:
{path_lines}"#
    )
}

const SERVICE_80: &str = "        backend:\n          service:\n            name: web\n            port:\n              number: 80\n";

#[test]
fn kubectl_is_refused_invalid_ingresses_with_kube_apiservers_messages() {
    let env = Env::new(Config::default());
    let refused = |manifest: &str| -> String {
        let e = env.fails_stdin(&["create", "-f", "-"], manifest);
        assert!(e.contains("is invalid"), "{e}\n{manifest}");
        e
    };
    let e = refused(&one_path("no-type", &format!("      - path: /\n{SERVICE_80}")));
    assert!(
        e.contains(r#"The Ingress "no-type" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"#),
        "{e}"
    );
    let e = refused(&one_path(
        "relative",
        &format!("      - path: foo\n        pathType: Prefix\n{SERVICE_80}"),
    ));
    assert!(
        e.contains(
            r#"spec.rules[0].http.paths[0].path: Invalid value: "foo": must be an absolute path"#
        ),
        "{e}"
    );
    let both = format!(
        "      - path: /\n        pathType: Exact\n{SERVICE_80}          resource:\n            kind: Bucket\n            name: assets\n"
    );
    let e = refused(&one_path("both", &both));
    assert!(
        e.contains(r#"spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both resource and service backends"#),
        "{e}"
    );
    let neither = "      - path: /\n        pathType: Exact\n        backend: {}\n";
    let e = refused(&one_path("neither", neither));
    assert!(
        e.contains(r#"spec.rules[0].http.paths[0].backend: Invalid value: "": resource or service backend is required"#),
        "{e}"
    );
    let no_port = "      - path: /\n        pathType: Exact\n        backend:\n          service:\n            name: web\n";
    let e = refused(&one_path("no-port", no_port));
    assert!(
        e.contains(
            "spec.rules[0].http.paths[0].backend: Required value: port name or number is required"
        ),
        "{e}"
    );
    let two_ports =
        format!("      - path: /\n        pathType: Exact\n{SERVICE_80}              name: http\n");
    let e = refused(&one_path("two-ports", &two_ports));
    assert!(
        e.contains(r#"spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both port name & port number"#),
        "{e}"
    );
    let good_path = format!("      - path: /\n        pathType: Prefix\n{SERVICE_80}");
    let e = refused(
        &one_path("bad-host", &good_path).replace("foo.example.com", "Foo_Bar.example.com"),
    );
    assert!(
        e.contains(r#"spec.rules[0].host: Invalid value: "Foo_Bar.example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"#),
        "{e}"
    );
    let e = refused(&one_path("bad-wildcard", &good_path).replace("foo.example.com", "foo.*.com"));
    assert!(
        e.contains(r#"spec.rules[0].host: Invalid value: "foo.*.com": a wildcard DNS-1123 subdomain must start with '*.'"#),
        "{e}"
    );
    let e = refused(&one_path("ip-host", &good_path).replace("foo.example.com", "10.1.2.3"));
    assert!(e.contains(r#"spec.rules[0].host: Invalid value: "10.1.2.3": must be a DNS name, not an IP address"#), "{e}");
    // A wildcard first label is a host name.
    let wildcard = one_path("wildcard", &good_path).replace("foo.example.com", "'*.example.com'");
    env.ok_stdin(&["create", "-f", "-"], &wildcard);
    assert!(env.ok(&["get", "ingress", "wildcard", "--no-headers"]).contains(" *.example.com "));

    // The refused ones were not stored.
    let names = env.ok(&["get", "ingress", "-o", "name"]);
    assert_eq!(names.trim(), "ingress.networking.k8s.io/wildcard");

    // Naming the class by the deprecated annotation is warned about; naming it both ways,
    // differently, is refused.
    let annotated =
        good_path_ingress("annotated", "  annotations:\n    kubernetes.io/ingress.class: nginx\n");
    let out = env.run_with(&["create", "-f", "-"], Some(&annotated), Duration::from_secs(30));
    assert!(out.ok, "{}", out.stderr);
    assert!(
        out.stderr.contains(r#"Warning: annotation "kubernetes.io/ingress.class" is deprecated, please use 'spec.ingressClassName' instead"#),
        "{}",
        out.stderr
    );
    let both = good_path_ingress(
        "both-classes",
        "  annotations:\n    kubernetes.io/ingress.class: nginx\n",
    )
    .replace("spec:\n", "spec:\n  ingressClassName: traefik\n");
    let e = refused(&both);
    assert!(
        e.contains(r#"annotations.kubernetes.io/ingress.class: Invalid value: "nginx": must match `ingressClassName` when both are specified"#),
        "{e}"
    );
    let explained = env.ok(&["explain", "ingress.spec.ingressClassName"]);
    assert!(explained.contains("ingressClassName"), "{explained}");
}

/// A valid Ingress `name` with `meta` added to its metadata.
fn good_path_ingress(name: &str, meta: &str) -> String {
    let good_path = format!("      - path: /\n        pathType: Prefix\n{SERVICE_80}");
    one_path(name, &good_path)
        .replace(&format!("  name: {name}\n"), &format!("  name: {name}\n{meta}"))
}

/// An ingress controller's service account, bound as such controllers are: it reads
/// Ingresses and IngressClasses and writes only the status, with kube-apiserver's Forbidden
/// messages naming `networking.k8s.io` resources beyond.
#[test]
fn rbac_names_ingress_resources_and_their_status() {
    let env = Env::new(Config::default());
    env.ok(&["create", "serviceaccount", "ctl"]);
    env.ok_stdin(
        &["apply", "-f", "-"],
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ingress-status, namespace: default}
rules:
- {apiGroups: [networking.k8s.io], resources: [ingresses], verbs: [get, list, watch]}
- {apiGroups: [networking.k8s.io], resources: [ingresses/status], verbs: [get, patch, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: ctl-ingress-status, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: ingress-status}
subjects:
- {kind: ServiceAccount, name: ctl, namespace: default}
"#,
    );
    env.ok_stdin(&["apply", "-f", "-"], INGRESS);
    let token = env.ok(&["create", "token", "ctl"]);
    let token = token.trim();
    assert!(env.ok(&["get", "ingress", "--token", token]).contains("web"));
    let status = r#"{"status":{"loadBalancer":{"ingress":[{"hostname":"lb.example.com"}]}}}"#;
    env.ok(&[
        "patch",
        "ing",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
        "--token",
        token,
    ]);
    let ing = env.json(&["get", "ingress", "web"]);
    assert_eq!(ing["status"]["loadBalancer"]["ingress"][0]["hostname"], "lb.example.com");
    let user = "system:serviceaccount:default:ctl";
    let err = env.fails(&["annotate", "ingress", "web", "x=y", "--token", token]);
    assert!(
        err.contains(&format!(r#"ingresses.networking.k8s.io "web" is forbidden: User "{user}" cannot patch resource "ingresses" in API group "networking.k8s.io" in the namespace "default""#)),
        "{err}"
    );
    let err = env.fails(&["get", "ingressclasses", "--token", token]);
    assert!(
        err.contains(&format!(r#"ingressclasses.networking.k8s.io is forbidden: User "{user}" cannot list resource "ingressclasses" in API group "networking.k8s.io" at the cluster scope"#)),
        "{err}"
    );
}
