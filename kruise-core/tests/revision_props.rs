//! Properties of revision data and in-place update decisions over generated templates.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use kruise_core::inplace::{UpdateOptions, calculate_update_spec};
use kruise_core::revision::quantity::{Quantity, canonical};
use kruise_core::revision::{RevisionData, gojson, goschema};
use proptest::prelude::*;
use serde_json::{Value, json};

fn quantity_text() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(""), Just("-")],
        0u32..5000,
        prop_oneof![Just(String::new()), (0u32..1000).prop_map(|f| format!(".{f}"))],
        prop_oneof![
            Just(""),
            Just("m"),
            Just("k"),
            Just("M"),
            Just("G"),
            Just("n"),
            Just("u"),
            Just("Ki"),
            Just("Mi"),
            Just("Gi"),
            Just("e3"),
            Just("e-2"),
            Just("E6")
        ],
    )
        .prop_map(|(sign, whole, fraction, suffix)| format!("{sign}{whole}{fraction}{suffix}"))
}

fn container() -> impl Strategy<Value = Value> {
    (
        "[a-z]{1,6}",
        "[a-z]{1,5}:[0-9]",
        proptest::option::of(prop::collection::vec("[a-z&<> ]{0,6}", 0..3)),
        proptest::option::of(quantity_text()),
        proptest::option::of(0u32..3),
        any::<bool>(),
    )
        .prop_map(|(name, image, args, cpu, port, stdin)| {
            let mut c = json!({"name": name, "image": image, "stdin": stdin});
            if let Some(args) = args {
                c["args"] = json!(args);
            }
            if let Some(cpu) = cpu.filter(|q| Quantity::parse(q).is_ok()) {
                c["resources"] = json!({"limits": {"cpu": cpu}});
            }
            if let Some(port) = port {
                c["ports"] = json!([{"containerPort": 8000 + port, "hostPort": 0}]);
            }
            c
        })
}

fn template() -> impl Strategy<Value = PodTemplateSpec> {
    (
        prop::collection::btree_map("[a-z]{1,4}", "[a-z]{0,4}", 0..3),
        prop::collection::vec(container(), 1..4),
        proptest::option::of(0i64..60),
    )
        .prop_map(|(labels, mut containers, grace)| {
            // Container names must be unique.
            for (i, c) in containers.iter_mut().enumerate() {
                c["name"] = json!(format!("{}{i}", c["name"].as_str().unwrap_or("c")));
            }
            let mut spec = json!({"containers": containers});
            if let Some(grace) = grace {
                spec["terminationGracePeriodSeconds"] = json!(grace);
            }
            serde_json::from_value(json!({"metadata": {"labels": labels}, "spec": spec}))
                .unwrap_or_default()
        })
}

proptest! {
    #[test]
    fn canonical_quantities_are_stable(text in quantity_text()) {
        if let Some(c) = canonical(&text) {
            // Go's canonical form of a binary quantity that is no whole multiple of 1024
            // (`4453.125Ki`) is a bare number (`4560000`), which reads back as decimal and is
            // then written `4560k`; from there on it is stable.
            let c = canonical(&c).expect("canonical parses");
            prop_assert_eq!(canonical(&c), Some(c.clone()), "canonical form is canonical");
            let before = Quantity::parse(&text).expect("parsed once");
            let after = Quantity::parse(&c).expect("canonical parses");
            prop_assert!(before == after, "{} and {} differ in value", text, c);
        }
    }

    #[test]
    fn normalisation_is_idempotent(t in template()) {
        let raw = serde_json::to_value(&t).expect("encode");
        let once = gojson::normalize_struct(&raw, goschema::POD_TEMPLATE_SPEC);
        let twice = gojson::normalize_struct(&once, goschema::POD_TEMPLATE_SPEC);
        prop_assert_eq!(&once, &twice);
        // The sorted encoding is valid JSON for the same value.
        let reparsed: Value = serde_json::from_str(&gojson::encode_sorted(&once)).expect("json");
        prop_assert_eq!(reparsed, once);
    }

    #[test]
    fn revision_data_survives_a_round_trip(t in template()) {
        let data = RevisionData::from_template(&t).expect("data");
        let mut template = data.value()["spec"]["template"].clone();
        template.as_object_mut().expect("object").remove("$patch");
        let restored: PodTemplateSpec = serde_json::from_value(template).expect("decode");
        let again = RevisionData::from_template(&restored).expect("data");
        // A binary quantity Go re-spells as a bare number (see `canonical_quantities_are_stable`)
        // changes once, as it does upstream; every other template comes back unchanged.
        let encoded = serde_json::to_string(&t).expect("encode");
        let respelled = ["Ki\"", "Mi\"", "Gi\""].iter().any(|s| encoded.contains(s));
        if !respelled {
            prop_assert_eq!(data.go_bytes(), again.go_bytes());
            prop_assert_eq!(data.hash(Some(0)), again.hash(Some(0)));
        }
        // After one trip, the data is stable.
        let mut template = again.value()["spec"]["template"].clone();
        template.as_object_mut().expect("object").remove("$patch");
        let restored: PodTemplateSpec = serde_json::from_value(template).expect("decode");
        let third = RevisionData::from_template(&restored).expect("data");
        prop_assert_eq!(again.go_bytes(), third.go_bytes());
    }

    #[test]
    fn binary_quantities_that_go_respells_settle_after_one_trip(kib in 1025u32..100_000) {
        // `kib/8 Ki` is a whole number of bytes but (for odd `kib`) no whole Ki.
        let text = format!("{}.125Ki", kib);
        let once = canonical(&text).expect("parses");
        let twice = canonical(&once).expect("parses");
        prop_assert_eq!(canonical(&twice), Some(twice.clone()));
        prop_assert!(Quantity::parse(&text).expect("parses") == Quantity::parse(&twice).expect("parses"));
    }

    #[test]
    fn unchanged_templates_update_in_place_with_nothing_to_do(t in template()) {
        let spec = calculate_update_spec(&t, &t, "r", &UpdateOptions::default()).expect("in place");
        prop_assert!(spec.container_images.is_empty());
        prop_assert!(spec.metadata_patch.is_none());
        prop_assert!(!spec.update_env_from_metadata);
    }

    #[test]
    fn image_changes_are_in_place(t in template(), which in prop::collection::vec(any::<bool>(), 4)) {
        let mut new = t.clone();
        let mut expected = BTreeMap::new();
        if let Some(spec) = new.spec.as_mut() {
            for (c, change) in spec.containers.iter_mut().zip(&which) {
                if *change {
                    let image = format!("{}-next", c.image.clone().unwrap_or_default());
                    expected.insert(c.name.clone(), image.clone());
                    c.image = Some(image);
                }
            }
        }
        let spec = calculate_update_spec(&t, &new, "r", &UpdateOptions::default()).expect("in place");
        prop_assert_eq!(spec.container_images, expected);
        prop_assert_eq!(spec.revision, "r");
    }

    #[test]
    fn other_spec_changes_recreate(t in template()) {
        let mut new = t.clone();
        if let Some(spec) = new.spec.as_mut() {
            spec.containers[0].working_dir = Some("/elsewhere".into());
        }
        prop_assert_eq!(calculate_update_spec(&t, &new, "r", &UpdateOptions::default()), None);
    }
}
