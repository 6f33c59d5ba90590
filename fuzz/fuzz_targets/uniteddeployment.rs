//! UnitedDeployments from arbitrary bytes (either version, as JSON): defaulting, validation,
//! the allocation and one plan run on whatever decodes, and nothing panics. When the
//! allocation succeeds for a pinned or min/max topology, the subsets never get a negative
//! number of replicas.

#![no_main]

use std::collections::BTreeMap;

use kruise_api::apps::{v1alpha1, v1beta1};
use kruise_core::uniteddeployment::allocation::{AllocationSpec, allocate};
use kruise_core::uniteddeployment::{Snapshot, admission, plan};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut uds = Vec::new();
    if let Ok(ud) = serde_json::from_slice::<v1beta1::UnitedDeployment>(data) {
        uds.push(ud);
    }
    if let Ok(ud) = serde_json::from_slice::<v1alpha1::UnitedDeployment>(data)
        && let Ok(hub) = kruise_api::conversion::to_hub(ud)
    {
        uds.push(hub);
    }
    let now = jiff::Timestamp::from_second(1_760_000_000).expect("a time");
    for mut ud in uds {
        admission::default_united_deployment(&mut ud, None, Default::default());
        let _ = admission::validate_united_deployment(&ud, None);
        if let Ok(allocation) = allocate(&AllocationSpec::of(&ud.spec), &BTreeMap::new()) {
            assert!(allocation.subsets.iter().all(|(_, r)| *r >= 0), "{allocation:?}");
        }
        let snapshot = Snapshot { ud, workloads: Vec::new(), revisions: Vec::new(), pods: Vec::new() };
        let _ = plan(&snapshot, now);
    }
});
