//! Cron schedules and the two job kinds that carry user-written schedules and containers,
//! from arbitrary bytes: a schedule as text, then (after a NUL byte) an AdvancedCronJob or an
//! EphemeralJob as JSON. Nothing panics; a parsed schedule's next run is after its start and
//! the runs it reports missed are no later than `now`; validation and one plan run on
//! whatever decodes.

#![no_main]

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use kruise_api::apps::{v1alpha1, v1beta1};
use kruise_core::cron::Schedule;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (text, json) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let now = Timestamp::from_second(1_760_000_000).expect("a time");
    if let Ok(text) = std::str::from_utf8(text)
        && let Ok(schedule) = Schedule::parse(text)
    {
        if let Some(next) = schedule.next_after(now, &TimeZone::UTC) {
            assert!(next > now, "{text}: {next} is not after {now}");
        }
        let earlier = now - SignedDuration::from_hours(3);
        let missed = schedule.most_recent_between(earlier, now, &TimeZone::UTC);
        assert!(missed.most_recent.is_none_or(|t| t > earlier && t <= now), "{text}");
    }
    if let Ok(mut acj) = serde_json::from_slice::<v1beta1::AdvancedCronJob>(json) {
        use kruise_core::advancedcronjob::{Snapshot, admission, plan};
        admission::default_advanced_cron_job(&mut acj, None, Default::default());
        let _ = admission::validate_advanced_cron_job(&acj, None);
        let snapshot =
            Snapshot { cron_job: acj, children: Vec::new(), default_zone: TimeZone::UTC };
        let _ = plan(&snapshot, now);
    }
    if let Ok(ejob) = serde_json::from_slice::<v1alpha1::EphemeralJob>(json) {
        use kruise_core::ephemeraljob::{Snapshot, admission, plan};
        let _ = admission::validate_ephemeral_job(&ejob);
        let _ = plan(&Snapshot { job: ejob, pods: Vec::new() }, now);
    }
});
