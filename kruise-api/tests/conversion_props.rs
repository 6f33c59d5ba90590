//! Property test: for every kind served at both v1alpha1 and v1beta1, an arbitrary object
//! that upstream's schema accepts decodes, and converting it to the other version and back
//! gives the same JSON. Objects are generated from upstream's CRD schemas, so every field
//! path the contract knows is exercised, including the annotations conversions read.
//!
//! `KRUISE_CRD=apps.kruise.io_clonesets.yaml` limits the run to one CRD.

mod common;

use std::collections::BTreeSet;

use kruise_api::KruiseObject;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A small deterministic generator (xorshift64*), driven by the seed proptest picks.
struct Gen {
    state: u64,
    /// String values worth trying: every enum value in the upstream schemas, plus a few
    /// generic ones.
    pool: Vec<String>,
    /// Annotation keys conversions are known to read.
    annotation_keys: Vec<&'static str>,
}

impl Gen {
    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn string(&mut self) -> String {
        let index = self.below(self.pool.len() as u64 + 3) as usize;
        match self.pool.get(index) {
            Some(value) => value.clone(),
            None => format!("v{}", self.below(1000)),
        }
    }

    fn value(&mut self, schema: &Value, depth: usize) -> Option<Value> {
        if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            && schema.get("properties").is_none()
        {
            // Opaque embedded objects (pod templates, raw resources) are carried verbatim
            // by every mapping and are left out here.
            return None;
        }
        if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Some(if self.chance(50) {
                json!(self.below(6))
            } else {
                json!(format!("{}%", self.below(101)))
            });
        }
        if let Some(Value::Array(options)) = schema.get("enum") {
            let index = self.below(options.len() as u64) as usize;
            return options.get(index).cloned();
        }
        match schema.get("type").and_then(Value::as_str)? {
            "string" => Some(match schema.get("format").and_then(Value::as_str) {
                Some("date-time") => {
                    json!(format!("2024-0{}-0{}T03:04:05Z", 1 + self.below(9), 1 + self.below(9)))
                }
                Some("byte") => json!("aGVsbG8="),
                _ => json!(self.string()),
            }),
            "integer" => Some(json!(self.below(6) as i64 - i64::from(self.chance(5)))),
            "number" => Some(json!(self.below(6))),
            "boolean" => Some(json!(self.chance(50))),
            "array" => {
                if depth > 6 {
                    return Some(json!([]));
                }
                let items = schema.get("items")?;
                let count = self.below(3);
                Some(Value::Array(
                    (0..count).filter_map(|_| self.value(items, depth + 1)).collect(),
                ))
            }
            "object" => {
                let mut map = Map::new();
                if let Some(Value::Object(props)) = schema.get("properties") {
                    let required: BTreeSet<&str> = schema
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    for (name, sub) in props {
                        let include =
                            required.contains(name.as_str()) || (depth < 7 && self.chance(55));
                        if include && let Some(value) = self.value(sub, depth + 1) {
                            map.insert(name.clone(), value);
                        }
                    }
                } else if let Some(additional @ Value::Object(_)) =
                    schema.get("additionalProperties")
                {
                    for i in 0..self.below(3) {
                        if let Some(value) = self.value(additional, depth + 1) {
                            map.insert(
                                format!("key{i}.example.com/{}", self.string().to_lowercase()),
                                value,
                            );
                        }
                    }
                }
                Some(Value::Object(map))
            }
            _ => None,
        }
    }

    fn metadata(&mut self) -> Value {
        let mut annotations = Map::new();
        for _ in 0..self.below(3) {
            let pick = self.below(self.annotation_keys.len() as u64) as usize;
            let key = self.annotation_keys[pick];
            let value = match self.below(4) {
                0 => json!(self.below(6).to_string()),
                1 => json!(format!("{}%", self.below(101))),
                // The rolling styles Kruise Rollout's annotation takes, in several spellings.
                2 => {
                    let styles = ["partition", "Partition", "canary", "Canary", "bluegreen"];
                    json!(styles[self.below(styles.len() as u64) as usize])
                }
                _ => json!(self.string()),
            };
            annotations.insert(key.to_owned(), value);
        }
        let mut labels = Map::new();
        if self.chance(30) {
            labels.insert(
                kruise_api::well_known::labels::CLONESET_SCALING_EXCLUDE_PREPARING_DELETE
                    .to_owned(),
                json!(if self.chance(50) { "true" } else { "false" }),
            );
        }
        let mut metadata = json!({"name": "sample", "namespace": "default", "generation": 3});
        if !annotations.is_empty() {
            metadata["annotations"] = Value::Object(annotations);
        }
        if !labels.is_empty() {
            metadata["labels"] = Value::Object(labels);
        }
        metadata
    }
}

fn enum_values(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(values)) = map.get("enum") {
                out.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            map.values().for_each(|v| enum_values(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| enum_values(v, out)),
        _ => {}
    }
}

struct Case {
    file: String,
    version: String,
    other: String,
    api_version: String,
    kind: String,
    schema: Value,
}

fn cases() -> (Vec<Case>, Vec<String>) {
    let only = std::env::var("KRUISE_CRD").ok();
    let mut cases = Vec::new();
    let mut pool = BTreeSet::new();
    for (file, crd) in common::upstream_crds() {
        enum_values(&crd, &mut pool);
        if only.as_ref().is_some_and(|only| *only != file) {
            continue;
        }
        let versions: Vec<&Value> =
            crd["spec"]["versions"].as_array().map(|v| v.iter().collect()).unwrap_or_default();
        if versions.len() != 2 {
            continue;
        }
        for (this, other) in [(0, 1), (1, 0)] {
            let group = crd["spec"]["group"].as_str().unwrap_or_default();
            let version = versions[this]["name"].as_str().unwrap_or_default().to_owned();
            cases.push(Case {
                file: file.clone(),
                api_version: format!("{group}/{version}"),
                version,
                other: format!("{group}/{}", versions[other]["name"].as_str().unwrap_or_default()),
                kind: crd["spec"]["names"]["kind"].as_str().unwrap_or_default().to_owned(),
                schema: versions[this]["schema"]["openAPIV3Schema"].clone(),
            });
        }
    }
    pool.extend(["", "a", "true", "app", "nginx:1.25", "default"].map(str::to_owned));
    (cases, pool.into_iter().collect())
}

fn generate(case: &Case, seed: u64, pool: &[String]) -> Value {
    let mut generator = Gen {
        state: seed | 1,
        pool: pool.to_vec(),
        annotation_keys: kruise_api::well_known::annotations::ALL
            .iter()
            .chain(kruise_api::well_known::rollouts::annotations::ALL)
            .copied()
            .collect(),
    };
    let mut object = generator.value(&case.schema, 0).unwrap_or_else(|| json!({}));
    object["apiVersion"] = json!(case.api_version);
    object["kind"] = json!(case.kind);
    object["metadata"] = generator.metadata();

    object
}

fn check(case: &Case, seed: u64, pool: &[String]) -> Result<(), String> {
    let generated = generate(case, seed, pool);
    let object = KruiseObject::from_value(generated.clone()).map_err(|err| {
        format!(
            "{} {}: schema-valid object does not decode: {err}\n{generated:#}",
            case.file, case.version
        )
    })?;
    let before = serde_json::to_value(&object).map_err(|e| e.to_string())?;
    let there = object
        .convert_to(&case.other)
        .map_err(|err| format!("{} {} -> {}: {err}", case.file, case.version, case.other))?;
    let there_json = serde_json::to_value(&there).map_err(|e| e.to_string())?;
    let back = there
        .convert_to(&case.api_version)
        .map_err(|err| format!("{} {} -> back: {err}", case.file, case.other))?;
    let after = serde_json::to_value(&back).map_err(|e| e.to_string())?;
    // Converting again gives the same converted object: the residue annotation is stable
    // and does not grow with repeated conversions.
    let again = back.clone().convert_to(&case.other).map_err(|err| {
        format!("{} {} -> {} (again): {err}", case.file, case.version, case.other)
    })?;
    let again_json = serde_json::to_value(&again).map_err(|e| e.to_string())?;
    if again_json != there_json {
        return Err(format!(
            "{} {} -> {} is not stable across repeated conversions\nfirst: {there_json:#}\nsecond: {again_json:#}",
            case.file, case.version, case.other
        ));
    }
    if before != after {
        return Err(format!(
            "{} {} -> {} -> back is not the identity\nbefore: {before:#}\nconverted: {there_json:#}\nafter: {after:#}",
            case.file, case.version, case.other
        ));
    }
    Ok(())
}

#[test]
fn every_two_version_kind_is_registered() {
    let (cases, _) = cases();
    let registered: BTreeSet<(String, String)> = KruiseObject::registered().into_iter().collect();
    let missing: Vec<String> = cases
        .iter()
        .filter(|case| !registered.contains(&(case.api_version.clone(), case.kind.clone())))
        .map(|case| format!("{} {}", case.api_version, case.kind))
        .collect();
    assert!(missing.is_empty(), "not registered: {missing:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn conversion_round_trips_are_the_identity(seed in any::<u64>()) {
        let (cases, pool) = cases();
        let registered: BTreeSet<(String, String)> = KruiseObject::registered().into_iter().collect();
        for case in cases.iter().filter(|c| registered.contains(&(c.api_version.clone(), c.kind.clone()))) {
            // Several objects per case and seed, so each run covers every kind many times.
            for round in 0..4u64 {
                let seed = seed.wrapping_add(round.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                if let Err(message) = check(case, seed, &pool) {
                    prop_assert!(false, "seed {seed}: {message}");
                }
            }
        }
    }
}
