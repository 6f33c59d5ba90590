//! Temporary scratch check (to be deleted).
use serde_json::Value;

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| x != &Value::String("...".into()));
            for x in m.values_mut() { strip(x) }
        }
        Value::Array(a) => for x in a { strip(x) },
        _ => {}
    }
}

#[test]
fn mine() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/upstream/examples");
    let mut fails = Vec::new();
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let mut v: Value = serde::Deserialize::deserialize(doc).unwrap();
            let kind = v["kind"].as_str().unwrap_or("").to_owned();
            if !(kind == "SidecarSet" || kind == "DaemonSet") || !v["apiVersion"].as_str().unwrap_or("").contains("kruise") { continue }
            strip(&mut v);
            n += 1;
            let o = match kruise_api::KruiseObject::from_value(v.clone()) { Ok(o) => o, Err(e) => { fails.push(format!("{p:?}: {e}")); continue } };
            let back = serde_json::to_value(&o).unwrap();
            if back != v { fails.push(format!("{p:?}: differs\n{v}\n{back}")); }
            let other = if o.api_version().ends_with("v1alpha1") { "apps.kruise.io/v1beta1" } else { "apps.kruise.io/v1alpha1" };
            let conv = o.clone().convert_to(other).unwrap();
            let convj = serde_json::to_value(&conv).unwrap();
            let rt = conv.convert_to(&o.api_version()).unwrap();
            let rtj = serde_json::to_value(&rt).unwrap();
            println!("{p:?}\n  -> {convj}");
            if rtj != v { fails.push(format!("{p:?}: conversion round trip differs\n{v}\n{rtj}")); }
        }
    }
    println!("{n} docs");
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}
