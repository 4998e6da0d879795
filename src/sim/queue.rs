//! The simulator's event queue: what each client does next, in virtual-time
//! order, ties in the order they were scheduled (so a seed always gives the
//! same run). Each client has exactly one event pending, so the queue holds
//! the clients themselves: an event carries its client's whole state, and
//! taking one touches memory in order instead of a random client among a
//! million.
//!
//! A binary heap over a million clients spends its time in cache misses;
//! this is a calendar queue instead. Times fall into buckets of a fixed
//! width on a ring that spans a horizon longer than the policy's longest
//! wait: scheduling appends to a bucket, and a bucket is sorted only when
//! virtual time reaches it, by a stable sort on time that keeps
//! scheduling order among equal times. Events past the horizon wait in a
//! heap until the ring comes round to them. Pure: times are virtual time
//! since the start; on the ring they are nanoseconds (584 years), and the
//! few events past that stay in the heap at full precision.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Buckets on the ring (a power of two).
const RING: u64 = 1 << 16;

/// One scheduled event: when, and what.
#[derive(Debug, Clone, Copy)]
struct Entry<T> {
    at: u64,
    item: T,
}

/// An event kept in a heap, ordered by time and then scheduling order.
#[derive(Debug, Clone, Copy)]
struct Keyed<K, T> {
    at: K,
    seq: u64,
    item: T,
}

impl<K: Ord, T> PartialEq for Keyed<K, T> {
    fn eq(&self, other: &Self) -> bool {
        (&self.at, self.seq) == (&other.at, other.seq)
    }
}

impl<K: Ord, T> Eq for Keyed<K, T> {}

impl<K: Ord, T> PartialOrd for Keyed<K, T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord, T> Ord for Keyed<K, T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.at, self.seq).cmp(&(&other.at, other.seq))
    }
}

#[derive(Debug)]
pub struct Queue<T> {
    /// Bucket width, in nanoseconds.
    width: u64,
    ring: Vec<Vec<Entry<T>>>,
    /// Entries on the ring outside the current bucket.
    on_ring: usize,
    /// The bucket virtual time is in (an absolute index, time / width).
    cursor: u64,
    /// The current bucket, sorted; entries before `next` are done.
    current: Vec<Entry<T>>,
    next: usize,
    /// Entries for the current bucket that sort before its last one.
    early: BinaryHeap<Reverse<Keyed<u64, T>>>,
    /// Entries past the ring's horizon.
    far: BinaryHeap<Reverse<Keyed<Duration, T>>>,
    /// Scheduling order, for the heaps.
    seq: u64,
}

impl<T: Copy> Queue<T> {
    /// An empty queue for `clients` clients whose ring spans at least
    /// `horizon` nanoseconds: events further ahead cost a heap push.
    pub fn new(horizon: u64, clients: u32) -> Queue<T> {
        // About a thousand events to a bucket whatever the fleet's size:
        // the clients' waits spread over about half the horizon (the cap),
        // so a bucket spans that over a thousandth of the clients (31 ms
        // for a million clients and a 30 s cap, 3 s for ten thousand).
        // Fuller buckets keep the few being filled in cache; emptier ones
        // would cost an allocation and a step of the ring per event.
        let width = (horizon / 2)
            .saturating_mul(1024)
            .checked_div(u64::from(clients).max(1))
            .unwrap_or(u64::MAX)
            .max(horizon.div_ceil(RING))
            .max(1);
        Queue {
            width,
            ring: (0..RING).map(|_| Vec::new()).collect(),
            on_ring: 0,
            cursor: 0,
            current: Vec::new(),
            next: 0,
            early: BinaryHeap::new(),
            far: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Whether `bucket` lies on the ring as it stands: within RING buckets
    /// from the current one (counted without overflow at the end of time).
    fn on_ring_range(&self, bucket: u64) -> bool {
        bucket
            .checked_sub(self.cursor)
            .is_some_and(|ahead| ahead < RING)
    }

    fn slot(&self, bucket: u64) -> usize {
        (bucket & (RING - 1)) as usize
    }

    /// Schedule `item` at `at`, which is never before the last event taken.
    #[inline]
    pub fn push(&mut self, at: Duration, item: T) {
        let seq = self.seq;
        self.seq += 1;
        let Ok(ns) = u64::try_from(at.as_nanos()) else {
            self.far.push(Reverse(Keyed { at, seq, item }));
            return;
        };
        let bucket = ns / self.width;
        if bucket == self.cursor {
            // Appending keeps the bucket sorted when nothing in it is later;
            // a million first attempts at t = 0 all go this way.
            if self.current.last().is_none_or(|e| e.at <= ns) {
                self.current.push(Entry { at: ns, item });
            } else {
                self.early.push(Reverse(Keyed { at: ns, seq, item }));
            }
        } else if self.on_ring_range(bucket) {
            let slot = self.slot(bucket);
            self.ring[slot].push(Entry { at: ns, item });
            self.on_ring += 1;
        } else {
            self.far.push(Reverse(Keyed { at, seq, item }));
        }
    }

    /// The earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Duration, T)> {
        loop {
            let head = self.current.get(self.next).map(|e| e.at);
            let early = self.early.peek().map(|Reverse(k)| k.at);
            // On equal times the bucket's entry goes first: an entry goes to
            // `early` only when the bucket already held a later one, so every
            // bucket entry at its time was scheduled before it.
            let (at, item) = match (head, early) {
                (Some(h), Some(e)) if e < h => self.early.pop().map(|Reverse(k)| (k.at, k.item))?,
                (Some(_), _) => {
                    let e = self.current[self.next];
                    self.next += 1;
                    (e.at, e.item)
                }
                (None, Some(_)) => self.early.pop().map(|Reverse(k)| (k.at, k.item))?,
                (None, None) => match self.advance() {
                    Next::Bucket => continue,
                    Next::Empty => return None,
                    // Past 584 years: only the heap is left, in order.
                    Next::Beyond => {
                        return self.far.pop().map(|Reverse(k)| (k.at, k.item));
                    }
                },
            };
            return Some((Duration::from_nanos(at), item));
        }
    }

    /// Move to the next bucket holding anything.
    fn advance(&mut self) -> Next {
        loop {
            // The drained bucket's memory is freed: kept for reuse, the
            // buckets of a whole turn of the ring would hold on to theirs.
            self.current = Vec::new();
            self.next = 0;
            if self.on_ring == 0 {
                let Some(Reverse(Keyed { at, .. })) = self.far.peek() else {
                    return Next::Empty;
                };
                let Ok(ns) = u64::try_from(at.as_nanos()) else {
                    return Next::Beyond;
                };
                self.cursor = ns / self.width;
            } else {
                self.cursor += 1;
            }
            // The ring's horizon moved: bring in what now falls within it,
            // in order, ahead of anything scheduled into those buckets later.
            while let Some(Reverse(Keyed { at, .. })) = self.far.peek() {
                let Ok(ns) = u64::try_from(at.as_nanos()) else {
                    break;
                };
                let bucket = ns / self.width;
                if !self.on_ring_range(bucket) {
                    break;
                }
                let Some(Reverse(Keyed { item, .. })) = self.far.pop() else {
                    break;
                };
                let slot = self.slot(bucket);
                self.ring[slot].push(Entry { at: ns, item });
                self.on_ring += 1;
            }
            let slot = self.slot(self.cursor);
            if self.ring[slot].is_empty() {
                continue;
            }
            let mut bucket = std::mem::take(&mut self.ring[slot]);
            self.on_ring -= bucket.len();
            // Stable: equal times stay in scheduling order.
            bucket.sort_by_key(|e| e.at);
            self.current = bucket;
            return Next::Bucket;
        }
    }
}

/// What [`Queue::advance`] found.
enum Next {
    /// A bucket with events is current.
    Bucket,
    Empty,
    /// Only events past the ring's range of times are left.
    Beyond,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The order a heap on (time, scheduling order) gives.
    fn reference(ops: &[(u64, bool)]) -> Vec<(u64, u32)> {
        let mut heap = BinaryHeap::new();
        let mut out = Vec::new();
        let mut now = 0;
        let mut seq = 0u64;
        for (i, &(delta, pop)) in ops.iter().enumerate() {
            if pop {
                if let Some(Reverse((at, _, c))) = heap.pop() {
                    now = at;
                    out.push((at, c));
                }
            } else {
                heap.push(Reverse((now + delta, seq, i as u32)));
                seq += 1;
            }
        }
        while let Some(Reverse((at, _, c))) = heap.pop() {
            out.push((at, c));
        }
        out
    }

    fn calendar(horizon: u64, clients: u32, ops: &[(u64, bool)]) -> Vec<(u64, u32)> {
        let mut q: Queue<u32> = Queue::new(horizon, clients);
        let mut out = Vec::new();
        let mut now = 0;
        let ns = |d: Duration| u64::try_from(d.as_nanos()).expect("in range");
        for (i, &(delta, pop)) in ops.iter().enumerate() {
            if pop {
                if let Some((at, c)) = q.pop() {
                    now = ns(at);
                    out.push((now, c));
                }
            } else {
                q.push(Duration::from_nanos(now + delta), i as u32);
            }
        }
        while let Some((at, c)) = q.pop() {
            out.push((ns(at), c));
        }
        out
    }

    #[test]
    fn ties_keep_scheduling_order() {
        let mut q: Queue<u32> = Queue::new(0, 1);
        for c in 0..5 {
            q.push(Duration::from_nanos(7), c);
        }
        q.push(Duration::from_nanos(3), 9);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop()).map(|e| e.1).collect();
        assert_eq!(order, vec![9, 0, 1, 2, 3, 4]);
    }

    #[test]
    fn events_far_past_the_horizon_come_back_in_order() {
        let ms = Duration::from_millis;
        let ages = Duration::from_secs(600 * 365 * 86_400);
        let mut q: Queue<u32> = Queue::new(0, 1);
        q.push(ms(500_000), 1);
        q.push(ms(70_000), 2);
        q.push(ms(500_000), 3);
        q.push(ages, 4);
        q.push(Duration::from_nanos(u64::MAX), 7);
        q.push(ms(5), 5);
        assert_eq!(q.pop(), Some((ms(5), 5)));
        q.push(ms(70_000), 6);
        assert_eq!(q.pop(), Some((ms(70_000), 2)));
        assert_eq!(q.pop(), Some((ms(70_000), 6)));
        assert_eq!(q.pop(), Some((ms(500_000), 1)));
        assert_eq!(q.pop(), Some((ms(500_000), 3)));
        assert_eq!(q.pop(), Some((Duration::from_nanos(u64::MAX), 7)));
        q.push(ages, 8);
        q.push(ages * 2, 9);
        assert_eq!(q.pop(), Some((ages, 4)));
        assert_eq!(q.pop(), Some((ages, 8)));
        assert_eq!(q.pop(), Some((ages * 2, 9)));
        assert_eq!(q.pop(), None);
    }

    proptest! {
        #[test]
        fn pops_in_the_order_of_a_heap(
            ops in prop::collection::vec(
                (prop_oneof![
                    Just(0u64),
                    0u64..2_000_000,
                    0u64..200_000_000,
                    0u64..200_000_000_000,
                ], any::<bool>()),
                0..400,
            ),
            horizon in prop_oneof![Just(0u64), Just(1_000_000_000_000u64)],
            clients in prop_oneof![Just(1u32), Just(1_000_000)],
        ) {
            prop_assert_eq!(calendar(horizon, clients, &ops), reference(&ops));
        }
    }
}
