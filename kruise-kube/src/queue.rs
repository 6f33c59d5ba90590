//! A rate-limited work queue with client-go's semantics.
//!
//! - **Dedup**: a key waiting in the queue is queued once, however often it is added.
//! - **Dirty re-add**: a key added while a worker processes it is not handed out again until
//!   that worker calls [`WorkQueue::done`]; then it is queued once more. So a key is never
//!   handed to two workers at once, and no add is lost.
//! - **Delays**: [`WorkQueue::add_after`] queues a key once its delay elapses; when a key already
//!   waits, the earlier deadline wins (client-go's delaying queue).
//! - **Backoff**: [`WorkQueue::add_rate_limited`] delays by `base * 2^failures`, capped at `max`
//!   (client-go's `ItemExponentialFailureRateLimiter`); [`WorkQueue::forget`] resets the count.
//! - **Shutdown**: [`WorkQueue::shut_down`] drops pending delayed keys, ignores further adds, and
//!   makes [`WorkQueue::get`] return the remaining ready keys and then `None`.
//!
//! Delays run on Tokio's clock ([`tokio::time::Instant`]), so `tokio::time::pause()` drives them
//! in tests. No background task is spawned: waiting [`WorkQueue::get`] calls sleep until the
//! earliest deadline and move due keys to the ready queue; [`WorkQueue::len`] does the same, so
//! the depth is current even when no worker waits.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::Metrics;

/// Per-key exponential backoff for [`WorkQueue::add_rate_limited`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The delay after the first failure; doubled for every further failure.
    pub base: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Default for Backoff {
    /// controller-runtime's defaults: 5 ms base, 1000 s cap.
    fn default() -> Self {
        Self { base: Duration::from_millis(5), max: Duration::from_secs(1000) }
    }
}

impl Backoff {
    /// The delay for a key that has failed `failures` times before: `base * 2^failures`, capped
    /// at `max`.
    pub fn delay(&self, failures: u32) -> Duration {
        1u32.checked_shl(failures)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.max, |d| d.min(self.max))
    }
}

/// A deduplicating, delaying, rate-limited work queue of keys `K`.
///
/// Cheap to clone; clones share the queue.
#[derive(Clone)]
pub struct WorkQueue<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    name: String,
    backoff: Backoff,
    state: Mutex<State<K>>,
    /// Wakes getters: `notify_one` per ready key, `notify_waiters` on shutdown or when the
    /// earliest deadline moves earlier.
    notify: Notify,
}

struct State<K> {
    /// Ready keys in FIFO order. Invariant: every key here is in `dirty` and not in
    /// `processing`, and appears once.
    ready: VecDeque<K>,
    /// Keys that need processing: queued in `ready`, or added while being processed.
    dirty: HashSet<K>,
    /// Keys handed out by `get` and not yet `done`.
    processing: HashSet<K>,
    /// Delayed keys by deadline; the sequence number keeps equal deadlines in add order.
    waiting: BTreeMap<(Instant, u64), K>,
    /// The `waiting` entry of each delayed key.
    waiting_keys: HashMap<K, (Instant, u64)>,
    next_seq: u64,
    failures: HashMap<K, u32>,
    shutting_down: bool,
    metrics: Option<Metrics>,
}

impl<K> std::fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.name)
            .field("backoff", &self.inner.backoff)
            .finish_non_exhaustive()
    }
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<K> {
    /// Creates an empty queue; `name` labels its metrics.
    pub fn new(name: impl Into<String>, backoff: Backoff) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: name.into(),
                backoff,
                state: Mutex::new(State {
                    ready: VecDeque::new(),
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    waiting: BTreeMap::new(),
                    waiting_keys: HashMap::new(),
                    next_seq: 0,
                    failures: HashMap::new(),
                    shutting_down: false,
                    metrics: None,
                }),
                notify: Notify::new(),
            }),
        }
    }

    /// Reports `workqueue_depth`, `workqueue_adds_total` and `workqueue_retries_total` under
    /// this queue's name to `metrics`.
    pub fn with_metrics(self, metrics: Metrics) -> Self {
        {
            let mut st = self.inner.lock();
            metrics.set_queue_depth(&self.inner.name, st.ready.len());
            st.metrics = Some(metrics);
        }
        self
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Queues `key` unless it is already queued; a key being processed is marked dirty and
    /// queued again by [`WorkQueue::done`]. Ignored after [`WorkQueue::shut_down`].
    pub fn add(&self, key: K) {
        let mut st = self.inner.lock();
        if self.inner.add_locked(&mut st, key) {
            self.inner.notify.notify_one();
        }
    }

    /// Queues `key` once `delay` has elapsed (at once for a zero delay). If `key` already waits
    /// for a later deadline, the earlier one wins; a later deadline than the pending one is
    /// ignored. Ignored after [`WorkQueue::shut_down`].
    pub fn add_after(&self, key: K, delay: Duration) {
        let mut st = self.inner.lock();
        if st.shutting_down {
            return;
        }
        if let Some(m) = &st.metrics {
            m.queue_retry(&self.inner.name);
        }
        if delay.is_zero() {
            if self.inner.add_locked(&mut st, key) {
                self.inner.notify.notify_one();
            }
            return;
        }
        let now = Instant::now();
        // A delay too long for the clock is treated as "about 30 years", which never fires in
        // practice but keeps the key known.
        let deadline = now
            .checked_add(delay)
            .unwrap_or_else(|| now + Duration::from_secs(30 * 365 * 24 * 60 * 60));
        if let Some(&(existing, seq)) = st.waiting_keys.get(&key) {
            if existing <= deadline {
                return;
            }
            st.waiting.remove(&(existing, seq));
        }
        let earliest_before = st.waiting.keys().next().map(|&(d, _)| d);
        let seq = st.next_seq;
        st.next_seq += 1;
        st.waiting.insert((deadline, seq), key.clone());
        st.waiting_keys.insert(key, (deadline, seq));
        if earliest_before.is_none_or(|d| deadline < d) {
            // Sleeping getters computed their wake-up from the old earliest deadline.
            self.inner.notify.notify_waiters();
        }
    }

    /// Queues `key` after its backoff delay (see [`Backoff::delay`]) and counts one more
    /// failure for it.
    pub fn add_rate_limited(&self, key: K) {
        let delay = {
            let mut st = self.inner.lock();
            let failures = st.failures.entry(key.clone()).or_insert(0);
            let delay = self.inner.backoff.delay(*failures);
            *failures = failures.saturating_add(1);
            delay
        };
        self.add_after(key, delay);
    }

    /// Resets `key`'s failure count, so its next backoff starts again at `base`.
    pub fn forget(&self, key: &K) {
        self.inner.lock().failures.remove(key);
    }

    /// How many times `key` went through [`WorkQueue::add_rate_limited`] since the last
    /// [`WorkQueue::forget`].
    pub fn num_requeues(&self, key: &K) -> u32 {
        self.inner.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Waits for a ready key and marks it as being processed; the caller must call
    /// [`WorkQueue::done`] with it. Returns `None` once the queue is shut down and holds no
    /// ready keys.
    pub async fn get(&self) -> Option<K> {
        loop {
            let notified = self.inner.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before looking at the state, so no wake-up between the check and the
            // wait is lost.
            notified.as_mut().enable();
            let next_deadline = {
                let mut st = self.inner.lock();
                self.inner.promote_due(&mut st);
                if let Some(key) = st.ready.pop_front() {
                    st.dirty.remove(&key);
                    st.processing.insert(key.clone());
                    self.inner.report_depth(&st);
                    if !st.ready.is_empty() {
                        // Keys promoted here may have no getter woken for them yet.
                        self.inner.notify.notify_one();
                    }
                    return Some(key);
                }
                if st.shutting_down {
                    return None;
                }
                st.waiting.keys().next().map(|&(d, _)| d)
            };
            match next_deadline {
                Some(deadline) => {
                    tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Marks `key` as processed; queues it again if it was added meanwhile. Keys not handed
    /// out by [`WorkQueue::get`] are ignored.
    pub fn done(&self, key: &K) {
        let mut st = self.inner.lock();
        if !st.processing.remove(key) {
            return;
        }
        if st.dirty.contains(key) {
            st.ready.push_back(key.clone());
            self.inner.report_depth(&st);
            self.inner.notify.notify_one();
        }
    }

    /// The number of ready keys (the queue depth), counting delayed keys that are due.
    pub fn len(&self) -> usize {
        let mut st = self.inner.lock();
        self.inner.promote_due(&mut st);
        st.ready.len()
    }

    /// Whether no key is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down: pending delayed keys are dropped, later adds are ignored, and
    /// every waiting [`WorkQueue::get`] wakes; `get` hands out the remaining ready keys and then
    /// returns `None`.
    pub fn shut_down(&self) {
        {
            let mut st = self.inner.lock();
            st.shutting_down = true;
            st.waiting.clear();
            st.waiting_keys.clear();
        }
        self.inner.notify.notify_waiters();
    }

    /// Whether [`WorkQueue::shut_down`] was called.
    pub fn is_shut_down(&self) -> bool {
        self.inner.lock().shutting_down
    }
}

impl<K: Clone + Eq + Hash> Inner<K> {
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // The state stays consistent across a panic in another holder: every mutation is
        // completed before anything that could panic, so a poisoned lock is safe to reuse.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// client-go's `Add`; returns whether the key was pushed to `ready`.
    fn add_locked(&self, st: &mut State<K>, key: K) -> bool {
        if st.shutting_down || st.dirty.contains(&key) {
            return false;
        }
        if let Some(m) = &st.metrics {
            m.queue_add(&self.name);
        }
        st.dirty.insert(key.clone());
        if st.processing.contains(&key) {
            return false;
        }
        st.ready.push_back(key);
        self.report_depth(st);
        true
    }

    /// Moves delayed keys whose deadline has passed to the ready queue.
    fn promote_due(&self, st: &mut State<K>) {
        let now = Instant::now();
        while let Some(entry) = st.waiting.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            st.waiting_keys.remove(&key);
            self.add_locked(st, key);
        }
    }

    fn report_depth(&self, st: &State<K>) {
        if let Some(m) = &st.metrics {
            m.set_queue_depth(&self.name, st.ready.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    const LONG: Duration = Duration::from_secs(3600);

    fn queue() -> WorkQueue<&'static str> {
        WorkQueue::new("test", Backoff::default())
    }

    /// `get` with a deadline; with paused time a missing key fails fast instead of hanging.
    async fn get_within(q: &WorkQueue<&'static str>, d: Duration) -> Option<&'static str> {
        tokio::time::timeout(d, q.get()).await.ok().flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn add_deduplicates_waiting_keys() {
        let q = queue();
        q.add("a");
        q.add("b");
        q.add("a");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
        assert_eq!(get_within(&q, LONG).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn key_added_while_processing_is_requeued_on_done() {
        let q = queue();
        q.add("a");
        assert_eq!(q.get().await, Some("a"));
        q.add("a");
        q.add("a");
        // Not handed out again while the first worker still holds it.
        assert!(q.is_empty());
        assert_eq!(get_within(&q, LONG).await, None);
        q.done(&"a");
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        // Not dirty any more: done does not queue it again.
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn done_without_add_does_not_requeue_and_stray_done_is_ignored() {
        let q = queue();
        q.add("a");
        q.done(&"a"); // not being processed: ignored, "a" stays queued once
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn workers_never_process_one_key_concurrently() {
        let q = queue();
        let in_flight: Rc<RefCell<HashSet<&'static str>>> = Rc::default();
        let processed: Rc<RefCell<Vec<&'static str>>> = Rc::default();
        let overlaps = Rc::new(RefCell::new(0u32));
        let local = tokio::task::LocalSet::new();
        for _ in 0..4 {
            let (q, in_flight, processed, overlaps) =
                (q.clone(), in_flight.clone(), processed.clone(), overlaps.clone());
            local.spawn_local(async move {
                while let Some(key) = q.get().await {
                    if !in_flight.borrow_mut().insert(key) {
                        *overlaps.borrow_mut() += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(7)).await;
                    in_flight.borrow_mut().remove(key);
                    processed.borrow_mut().push(key);
                    q.done(&key);
                }
            });
        }
        let producer = q.clone();
        local
            .run_until(async move {
                for round in 0..20u64 {
                    for key in ["a", "b", "a", "c", "a"] {
                        producer.add(key);
                    }
                    tokio::time::sleep(Duration::from_millis(round % 5)).await;
                }
                // Let the workers drain, then stop them.
                tokio::time::sleep(Duration::from_secs(1)).await;
                producer.shut_down();
            })
            .await;
        local.await;
        assert_eq!(*overlaps.borrow(), 0);
        let processed = processed.borrow();
        for key in ["a", "b", "c"] {
            assert!(processed.contains(&key), "{key} never processed");
        }
        assert!(in_flight.borrow().is_empty());
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn last_add_during_processing_is_not_lost() {
        let q = queue();
        q.add("a");
        let key = q.get().await;
        assert_eq!(key, Some("a"));
        q.add("a"); // arrives while "a" is processed
        q.done(&"a");
        assert_eq!(get_within(&q, LONG).await, Some("a"));
    }

    #[test]
    fn backoff_doubles_from_base_and_caps_at_max() {
        let b = Backoff::default();
        assert_eq!(b.base, Duration::from_millis(5));
        assert_eq!(b.max, Duration::from_secs(1000));
        let delays: Vec<_> = (0..5).map(|f| b.delay(f)).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80].map(Duration::from_millis));
        // 5ms * 2^18 = 1310.72s > 1000s.
        assert_eq!(b.delay(17), Duration::from_millis(655_360));
        assert_eq!(b.delay(18), b.max);
        assert_eq!(b.delay(31), b.max);
        assert_eq!(b.delay(32), b.max);
        assert_eq!(b.delay(u32::MAX), b.max);
    }

    #[tokio::test(start_paused = true)]
    async fn add_rate_limited_follows_backoff_sequence() {
        let backoff = Backoff { base: Duration::from_millis(5), max: Duration::from_millis(40) };
        let q = WorkQueue::new("rl", backoff);
        let expected = [5u64, 10, 20, 40, 40, 40];
        for (i, want) in expected.into_iter().enumerate() {
            let start = Instant::now();
            q.add_rate_limited("k");
            assert_eq!(q.num_requeues(&"k"), u32::try_from(i + 1).unwrap_or(u32::MAX));
            assert!(q.is_empty(), "ready before its backoff");
            tokio::time::advance(Duration::from_millis(want - 1)).await;
            assert!(q.is_empty(), "ready before {want}ms");
            assert_eq!(q.get().await, Some("k"));
            assert_eq!(start.elapsed(), Duration::from_millis(want));
            q.done(&"k");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn forget_resets_failures() {
        let q = queue();
        for _ in 0..3 {
            q.add_rate_limited("k");
        }
        assert_eq!(q.num_requeues(&"k"), 3);
        assert_eq!(q.num_requeues(&"other"), 0);
        q.forget(&"k");
        assert_eq!(q.num_requeues(&"k"), 0);
        // Drain the pending 5ms add, then the next failure starts again at base.
        assert_eq!(get_within(&q, LONG).await, Some("k"));
        q.done(&"k");
        let start = Instant::now();
        q.add_rate_limited("k");
        assert_eq!(get_within(&q, LONG).await, Some("k"));
        assert_eq!(start.elapsed(), Duration::from_millis(5));
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_hands_out_keys_in_deadline_order() {
        let q = queue();
        let start = Instant::now();
        q.add_after("late", Duration::from_millis(30));
        q.add_after("early", Duration::from_millis(10));
        q.add_after("middle", Duration::from_millis(20));
        q.add_after("now", Duration::ZERO);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("now"));
        assert_eq!(q.get().await, Some("early"));
        assert_eq!(start.elapsed(), Duration::from_millis(10));
        assert_eq!(q.get().await, Some("middle"));
        assert_eq!(start.elapsed(), Duration::from_millis(20));
        assert_eq!(q.get().await, Some("late"));
        assert_eq!(start.elapsed(), Duration::from_millis(30));
    }

    #[tokio::test(start_paused = true)]
    async fn shorter_delay_wins_over_pending_longer_one() {
        let q = queue();
        let start = Instant::now();
        q.add_after("k", Duration::from_secs(60));
        q.add_after("k", Duration::from_secs(5));
        // A longer delay than the pending one does not push it back.
        q.add_after("k", Duration::from_secs(30));
        assert_eq!(get_within(&q, LONG).await, Some("k"));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        q.done(&"k");
        // The replaced 60s entry is gone: nothing else arrives.
        assert_eq!(get_within(&q, LONG).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_getter_wakes_for_earlier_delayed_key() {
        let q = queue();
        q.add_after("slow", Duration::from_secs(100));
        let getter = {
            let q = q.clone();
            tokio::spawn(async move {
                let key = q.get().await;
                (key, Instant::now())
            })
        };
        tokio::task::yield_now().await; // let the getter sleep towards the 100s deadline
        let start = Instant::now();
        q.add_after("fast", Duration::from_secs(1));
        let (key, at) = getter.await.unwrap_or((None, start));
        assert_eq!(key, Some("fast"));
        assert_eq!(at - start, Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_key_is_deduplicated_with_ready_copy() {
        let q = queue();
        q.add("k");
        q.add_after("k", Duration::from_millis(10));
        tokio::time::advance(Duration::from_millis(10)).await;
        // The delayed add lands while "k" still waits: still queued once.
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("k"));
        q.done(&"k");
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_wakes_every_getter() {
        let q = queue();
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        assert!(!q.is_shut_down());
        q.shut_down();
        assert!(q.is_shut_down());
        for g in getters {
            let got = tokio::time::timeout(LONG, g).await;
            assert!(matches!(got, Ok(Ok(None))), "getter not woken with None: {got:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_drains_ready_keys_and_ignores_new_ones() {
        let q = queue();
        q.add("a");
        q.add("b");
        q.add_after("delayed", Duration::from_millis(5));
        q.shut_down();
        q.add("c");
        q.add_after("d", Duration::ZERO);
        q.add_rate_limited("e");
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(q.get().await, None);
        assert_eq!(q.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn metrics_track_depth_adds_and_retries() {
        let metrics = Metrics::new();
        let q = WorkQueue::new("cloneset", Backoff::default()).with_metrics(metrics.clone());
        assert_eq!(q.name(), "cloneset");
        q.add("a");
        q.add("a"); // deduplicated: not an add
        q.add("b");
        q.add_rate_limited("c");
        let text = metrics.encode();
        assert!(text.contains("workqueue_depth{name=\"cloneset\"} 2\n"), "{text}");
        assert!(text.contains("workqueue_adds_total{name=\"cloneset\"} 2\n"), "{text}");
        assert!(text.contains("workqueue_retries_total{name=\"cloneset\"} 1\n"), "{text}");
        assert_eq!(q.get().await, Some("a"));
        assert!(metrics.encode().contains("workqueue_depth{name=\"cloneset\"} 1\n"));
        tokio::time::advance(Duration::from_millis(5)).await;
        assert_eq!(q.len(), 2);
        let text = metrics.encode();
        assert!(text.contains("workqueue_depth{name=\"cloneset\"} 2\n"), "{text}");
        assert!(text.contains("workqueue_adds_total{name=\"cloneset\"} 3\n"), "{text}");
    }
}
