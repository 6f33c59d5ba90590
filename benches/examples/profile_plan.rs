//! Plans one workload many times, for profilers: `profile_plan [pods] [rounds]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let n = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let snapshot = benches::snapshot(n);
    let now = benches::now();
    let start = std::time::Instant::now();
    let mut actions = 0;
    for _ in 0..rounds {
        actions += kruise_core::cloneset::plan(std::hint::black_box(&snapshot), now).actions.len();
    }
    let per = start.elapsed() / u32::try_from(rounds.max(1)).unwrap_or(1);
    println!("{n} pods: {per:?} per plan ({} actions)", actions / rounds.max(1));
}
