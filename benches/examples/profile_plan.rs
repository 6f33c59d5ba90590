//! Plans one workload many times, for profilers:
//! `profile_plan [cloneset|cloneset-scale-out|statefulset|statefulset-in-place] [pods] [rounds]`
//! (`cloneset-scale-out`: the same CloneSet with no pods yet, so the plan creates `pods`).
//!
//! Instruction counts are steadier than times on a shared machine: run it under
//! `valgrind --tool=callgrind` with 0 and with N rounds, and divide the difference by N.

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "cloneset".to_owned());
    let n = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let now = benches::now();
    let mut plan: Box<dyn FnMut() -> usize> = match kind.as_str() {
        "cloneset" => {
            let snapshot = benches::snapshot(n);
            Box::new(move || {
                kruise_core::cloneset::plan(std::hint::black_box(&snapshot), now).actions.len()
            })
        }
        "cloneset-scale-out" => {
            let mut snapshot = benches::snapshot(n);
            snapshot.pods.clear();
            Box::new(move || {
                kruise_core::cloneset::plan(std::hint::black_box(&snapshot), now).actions.len()
            })
        }
        "statefulset" | "statefulset-in-place" => {
            let snapshot = benches::statefulset_snapshot(n, kind == "statefulset-in-place");
            Box::new(move || {
                kruise_core::statefulset::plan(std::hint::black_box(&snapshot), now).actions.len()
            })
        }
        other => {
            eprintln!(
                "unknown kind {other:?}: use cloneset, cloneset-scale-out, statefulset or \
                 statefulset-in-place"
            );
            std::process::exit(2);
        }
    };
    let start = std::time::Instant::now();
    let mut actions = 0;
    for _ in 0..rounds {
        actions += plan();
    }
    let per = start.elapsed() / u32::try_from(rounds.max(1)).unwrap_or(1);
    println!("{kind} {n} pods: {per:?} per plan ({} actions)", actions / rounds.max(1));
}
