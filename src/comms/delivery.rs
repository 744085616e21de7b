//! The delivery planner: how a step's sends, decided by the seed's rules in [`super::model`],
//! are applied together fast. Sends are planned on any thread into [`PlannedChunk`]s (each
//! send's drops, its receivers in reach and the one letter they share); a step's chunks are
//! then applied together ([`CommsModel::apply_all`]), each block of [`PASS_CHUNK`] receiver
//! slots on its own, in parallel, and every robot's due messages are handed out in parallel
//! passes ([`CommsModel::hand_out_all`]).
//!
//! Nothing here changes what the model decides: a loss draw depends only on the scene seed, the
//! step, the sender, which of its sends of that step it is and the receiver
//! ([`super::model::loss_draw`]), each queue takes its messages in sending order, and a
//! message's sequence number is its send's place in sending order, so the deliveries are the
//! same on any number of threads, for any cut of the sends into chunks and any order of a
//! broadcast's candidates.

use std::ops::Range;
use std::sync::Arc;

use super::model::{
    CommsModel, DropCause, Drops, Handed, Letter, Message, Nearby, Reach, RobotId, RobotRecord, Sent, To, arrival,
    send_key, take_due,
};
use crate::sim::{PASS_CHUNK, Passes};

/// A send decided but not yet applied: drops by cause, the receivers in reach (a range of its
/// chunk's list) with their receive steps and delivery probabilities, and the letter they would
/// share.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Planned<T> {
    sender: Option<RobotId>,
    drops: Drops,
    errors: u64,
    queue: Range<usize>,
    /// Made where the send is planned (on any thread), when it has receivers in reach.
    letter: Option<Arc<Letter<T>>>,
    /// Seeds its receivers' loss draws; given when the send is applied, if its sender is still
    /// registered (no message of the send is served otherwise).
    key: Option<u64>,
}

/// A run of a step's sends planned together, in sending order (one chunk of a parallel planning
/// pass, or a single send): each send's plan and every receiver in reach of them, then, once
/// [`CommsModel::seal`]ed, those receivers grouped by the block of [`PASS_CHUNK`] slots their
/// receiver is in, so that [`CommsModel::apply_all`] serves each block of receivers on its own
/// without sorting the step's messages.
#[derive(Debug)]
pub struct PlannedChunk<T> {
    plans: Vec<Planned<T>>,
    reaches: Vec<Reach>,
    /// The reaches by block, in sending order within a block.
    staged: Vec<Staged>,
    /// `staged[starts[b]..starts[b + 1]]` go to block `b`.
    starts: Vec<u32>,
    /// The blocks it was sealed for (0: not sealed).
    sealed: usize,
    /// Letters of earlier steps, kept to be written over once no message holds them: the
    /// oldest last.
    spare: Vec<Arc<Letter<T>>>,
    /// Spare letters found still held while planning this step, for a later one.
    held: Vec<Arc<Letter<T>>>,
}

impl<T> Default for PlannedChunk<T> {
    fn default() -> Self {
        Self {
            plans: Vec::new(),
            reaches: Vec::new(),
            staged: Vec::new(),
            starts: Vec::new(),
            sealed: 0,
            spare: Vec::new(),
            held: Vec::new(),
        }
    }
}

impl<T> PlannedChunk<T> {
    /// Empties it for the next step's sends, keeping its room and its letters: a chunk planned
    /// into step after step makes a new letter only when every one it made before is still
    /// held by a message (instead of an allocation and a free for every send). It keeps at most
    /// a few times as many letters as its last step's sends.
    pub fn recycle(&mut self) {
        let sends = self.plans.len();
        let (earlier, held) = (std::mem::take(&mut self.spare), std::mem::take(&mut self.held));
        // Newest first, so the oldest (the likeliest to be free) are taken first.
        self.spare.extend(self.plans.drain(..).filter_map(|p| p.letter));
        self.spare.extend(earlier);
        self.spare.extend(held);
        let keep = 4 * sends + 64;
        if self.spare.len() > keep {
            self.spare.drain(..self.spare.len() - keep);
        }
        self.reaches.clear();
        self.staged.clear();
        self.sealed = 0;
    }

    /// A letter for a send: a spare one no message holds any more, written over, or a new one.
    fn letter(&mut self, letter: Letter<T>) -> Arc<Letter<T>> {
        while let Some(mut spare) = self.spare.pop() {
            if let Some(free) = Arc::get_mut(&mut spare) {
                *free = letter;
                return spare;
            }
            self.held.push(spare);
        }
        Arc::new(letter)
    }

    /// Groups the reaches by block of [`PASS_CHUNK`] receivers (`blocks` of them): a counting
    /// sort, so each block's reaches stay in sending order.
    fn seal(&mut self, blocks: usize) {
        let blocks = blocks.max(1);
        self.starts.clear();
        self.starts.resize(blocks + 1, 0);
        for r in &self.reaches {
            self.starts[r.receiver as usize / PASS_CHUNK + 1] += 1;
        }
        for b in 0..blocks {
            self.starts[b + 1] += self.starts[b];
        }
        let mut next = self.starts[..blocks].to_vec();
        self.staged.clear();
        self.staged.resize(self.reaches.len(), Staged::default());
        for (send, planned) in self.plans.iter().enumerate() {
            for order in planned.queue.clone() {
                let r = self.reaches[order];
                let at = &mut next[r.receiver as usize / PASS_CHUNK];
                self.staged[*at as usize] = Staged {
                    receiver: r.receiver,
                    send: send as u32,
                    order: order as u32,
                    probability: r.probability,
                    at: r.at,
                };
                *at += 1;
            }
        }
        self.sealed = blocks;
    }

    /// The reaches for receivers of block `b`, in sending order.
    fn block(&self, b: usize) -> &[Staged] {
        &self.staged[self.starts[b] as usize..self.starts[b + 1] as usize]
    }
}

impl<T> CommsModel<T> {
    /// Decides a send at `step` by the rules of seed 000 ([`CommsModel::decide`]: the system
    /// link, then the sender, then each receiver's links and range) into `chunk`, after the
    /// sends planned into it before; the receivers in reach will share one letter of `content`.
    /// The loss draw and room in the receiver's queue come when the send is applied.
    /// `candidates` and `distance` are what [`CommsModel::decide`] takes.
    #[allow(clippy::too_many_arguments)]
    pub fn plan(
        &self,
        sender: Option<RobotId>,
        to: To,
        step: u64,
        candidates: &[Nearby],
        distance: impl Fn(RobotId, RobotId) -> Option<f32>,
        chunk: &mut PlannedChunk<T>,
        content: T,
    ) {
        chunk.sealed = 0;
        let start = chunk.reaches.len();
        let decision = self.decide(sender, to, step, candidates, distance, &mut chunk.reaches);
        let queue = start..chunk.reaches.len();
        let letter = match decision.from {
            Some(from) if !queue.is_empty() => {
                let receiver = match to {
                    To::Broadcast => None,
                    To::Robot(_) => self.record(chunk.reaches[start].receiver).map(|r| r.name.clone()),
                };
                Some(chunk.letter(Letter { sender: from.name.clone(), receiver, content }))
            }
            _ => None,
        };
        let (drops, errors) = (decision.drops, decision.errors);
        chunk.plans.push(Planned { sender, drops, errors, queue, letter, key: None });
    }

    /// Readies a planned chunk for [`CommsModel::apply_all`] (its receivers grouped by block of
    /// slots): best done where it was planned, in the parallel pass. `apply_all` seals a chunk
    /// that is not.
    pub fn seal(&self, chunk: &mut PlannedChunk<T>) {
        chunk.seal(self.blocks());
    }

    /// Blocks of [`PASS_CHUNK`] slots, as the passes over the slots cut them.
    fn blocks(&self) -> usize {
        self.slots.len().div_ceil(PASS_CHUNK).max(1)
    }

    /// Applies a step's planned sends: `chunks` in sending order, each filled by
    /// [`CommsModel::plan`] in sending order. Returns what became of each send, in order; the
    /// result is the same for any thread count and any cut of the sends into chunks.
    pub fn apply_all(&mut self, step: u64, chunks: &mut [PlannedChunk<T>], passes: &Passes) -> Vec<Sent>
    where
        T: Send + Sync,
    {
        let (mut results, places) = self.open_sends(step, chunks);
        let served = self.serve_blocks(step, chunks, &places, passes);
        let queued = self.count_failures(chunks, &places, &served, &mut results);
        self.settle_sends(chunks, &places, &mut results);
        self.stats.in_flight += queued;
        self.seq += results.len() as u64;
        results
    }

    /// The first step of [`CommsModel::apply_all`]: seals every chunk not sealed for today's
    /// slots, counts each send's decided drops and errors, and keys the loss draws of each send
    /// whose sender is still registered by which of its sender's sends of the step it is.
    fn open_sends(&mut self, step: u64, chunks: &mut [PlannedChunk<T>]) -> (Vec<Sent>, Places) {
        let blocks = self.blocks();
        let mut results = Vec::with_capacity(chunks.iter().map(|c| c.plans.len()).sum());
        let mut places = Places {
            first_message: Vec::with_capacity(chunks.len()),
            first_send: Vec::with_capacity(chunks.len()),
            messages: 0,
        };
        for chunk in chunks.iter_mut() {
            if chunk.sealed != blocks {
                chunk.seal(blocks);
            }
            places.first_message.push(places.messages);
            places.first_send.push(results.len() as u32);
            places.messages += chunk.reaches.len() as u32;
            for planned in &mut chunk.plans {
                results.push(Sent { dropped: planned.drops, ..Sent::default() });
                self.stats.errors += planned.errors;
                self.stats.sent += planned.drops.total();
                for (cause, n) in planned.drops.iter() {
                    self.stats.dropped.add(cause, n);
                }
                planned.key = None;
                let Some(s) = planned.sender.filter(|&s| self.record(s).is_some()) else { continue };
                let nth = &mut self.sends_at[s as usize];
                if nth.0 != step {
                    *nth = (step, 0);
                }
                planned.key = Some(send_key(self.draw_seed, step, s, nth.1));
                nth.1 += 1;
            }
        }
        (results, places)
    }

    /// Serves every block of [`PASS_CHUNK`] receivers on its own (in parallel passes when
    /// `passes` say so): each receiver takes its messages in sending order, each kept or failed
    /// by [`arrival`].
    fn serve_blocks(&mut self, step: u64, chunks: &[PlannedChunk<T>], places: &Places, passes: &Passes) -> Vec<Served>
    where
        T: Send + Sync,
    {
        if places.messages == 0 {
            return Vec::new();
        }
        let at = Serving { step, capacity: self.capacity, seq: self.seq, first_send: &places.first_send };
        passes.map_chunks_mut(&mut self.slots, |first, block| serve_block(chunks, &at, first, block))
    }

    /// Counts the messages the blocks failed for their send, its sender and the model, and
    /// marks each by its place among the step's messages; returns how many were queued.
    fn count_failures(
        &mut self,
        chunks: &[PlannedChunk<T>],
        places: &Places,
        served: &[Served],
        results: &mut [Sent],
    ) -> u64 {
        let failed_bits = &mut self.failed_bits;
        failed_bits.clear();
        failed_bits.resize((places.messages as usize).div_ceil(64), 0);
        let mut queued = 0;
        for block in served {
            queued += block.queued;
            for f in &block.failed {
                let place = (places.first_message[f.chunk as usize] + f.order) as usize;
                failed_bits[place / 64] |= 1 << (place % 64);
                results[(places.first_send[f.chunk as usize] + f.send) as usize].dropped.add(f.cause, 1);
                self.stats.dropped.add(f.cause, 1);
                let sender = chunks[f.chunk as usize].plans[f.send as usize].sender;
                if let Some(record) = sender.and_then(|s| self.slots[s as usize].as_mut()) {
                    record.stats.dropped.add(f.cause, 1);
                }
            }
        }
        queued
    }

    /// Each applied send's outcome: its messages less those that failed, the latest receive step
    /// of those queued, and its sender's count of what it sent.
    fn settle_sends(&mut self, chunks: &[PlannedChunk<T>], places: &Places, results: &mut [Sent]) {
        let failed_bits = &self.failed_bits;
        let failed = |place: usize| failed_bits[place / 64] & (1 << (place % 64)) != 0;
        let mut sent = results.iter_mut();
        for (c, chunk) in chunks.iter().enumerate() {
            for planned in &chunk.plans {
                let sent = sent.next().expect("a result for every send");
                let Some(s) = planned.sender.filter(|_| planned.key.is_some()) else { continue };
                let run = planned.queue.len() as u64;
                let failures = sent.dropped.total() - planned.drops.total();
                sent.queued = run - failures;
                let base = places.first_message[c] as usize;
                let reaches = &chunk.reaches[planned.queue.clone()];
                sent.received_step = if failures == 0 {
                    reaches.iter().map(|r| r.at).max()
                } else {
                    let queued = planned.queue.clone().filter(|&i| !failed(base + i));
                    queued.map(|i| chunk.reaches[i].at).max()
                };
                self.stats.sent += run;
                let from = &mut self.slots[s as usize].as_mut().expect("a sender of this step").stats;
                from.sent += planned.drops.total() + run;
                for (cause, n) in planned.drops.iter() {
                    from.dropped.add(cause, n);
                }
            }
        }
    }

    /// Plans and applies one send (see [`CommsModel::plan`]).
    pub fn send(
        &mut self,
        sender: Option<RobotId>,
        to: To,
        content: T,
        step: u64,
        candidates: &[Nearby],
        distance: impl Fn(RobotId, RobotId) -> Option<f32>,
    ) -> Sent
    where
        T: Send + Sync,
    {
        self.prepare();
        let mut chunk = PlannedChunk::default();
        self.plan(sender, to, step, candidates, distance, &mut chunk, content);
        self.seal(&mut chunk);
        let mut sent = self.apply_all(step, std::slice::from_mut(&mut chunk), &Passes::ONE);
        sent.pop().expect("one send, one result")
    }

    /// For every robot, moves the messages whose receive step has come out of its queue, to be
    /// taken with [`CommsModel::swap_ready`] (in parallel passes when `passes` say so). What was
    /// handed out before and not taken, or given back by `swap_ready`, is dropped here.
    pub fn hand_out_all(&mut self, step: u64, passes: &Passes)
    where
        T: Send + Sync,
    {
        let handed = passes.map_chunks_mut(&mut self.slots, |_, chunk| {
            let mut handed = Handed::default();
            for record in chunk.iter_mut().flatten() {
                record.ready.clear();
                if record.inbox.first().is_some_and(|m| m.received_step <= step) {
                    let RobotRecord { inbox, ready, stats, .. } = record;
                    handed.add(take_due(inbox, stats, step, ready));
                }
            }
            handed
        });
        for h in handed {
            self.delivered(h);
        }
    }

    /// Whether [`CommsModel::hand_out_all`] handed out anything for `id` this step.
    pub fn has_ready(&self, id: RobotId) -> bool {
        self.record(id).is_some_and(|r| !r.ready.is_empty())
    }

    /// Swaps `out` with what the last [`CommsModel::hand_out_all`] handed out for `id` (`out`
    /// is emptied if `id` has no slot): `out`'s old messages are dropped by the next hand-out,
    /// which must come before the next swap.
    pub fn swap_ready(&mut self, id: Option<RobotId>, out: &mut Vec<Message<T>>) {
        match id.and_then(|id| self.slots.get_mut(id as usize)?.as_mut()) {
            Some(record) => std::mem::swap(&mut record.ready, out),
            None => out.clear(),
        }
    }
}

/// Where each chunk's messages and sends start among the step's, and how many messages the
/// step has.
struct Places {
    first_message: Vec<u32>,
    first_send: Vec<u32>,
    messages: u32,
}

/// What every block serving a step's messages shares.
struct Serving<'a> {
    step: u64,
    capacity: usize,
    /// The sequence number of the last send of the steps before.
    seq: u64,
    first_send: &'a [u32],
}

/// Serves one block of receivers (slots from `first`): every message of the step to them, in
/// receiver order and each receiver's in sending order, queued or failed.
fn serve_block<T>(
    chunks: &[PlannedChunk<T>],
    at: &Serving,
    first: usize,
    block: &mut [Option<RobotRecord<T>>],
) -> Served {
    let mut served = Served::default();
    let mut by_receiver = BY_RECEIVER.take();
    in_receiver_order(chunks, first, &mut by_receiver);
    for &(c, i) in by_receiver.iter() {
        let chunk = &chunks[c as usize];
        let s = chunk.staged[i as usize];
        let planned = &chunk.plans[s.send as usize];
        let Some(key) = planned.key else { continue };
        let record = block.get_mut(s.receiver as usize - first).and_then(Option::as_mut);
        match arrival(record.as_deref(), s.probability, key, s.receiver, at.capacity) {
            Ok(()) => {
                let letter = planned.letter.as_ref().expect("a send with receivers has a letter");
                let message = Message {
                    letter: letter.clone(),
                    sent_step: at.step,
                    received_step: s.at,
                    // Sending order: the send's place among the step's, after every earlier
                    // step's.
                    seq: at.seq + u64::from(at.first_send[c as usize] + s.send) + 1,
                };
                record.expect("an arrival has a receiver").enqueue(message);
                served.queued += 1;
            }
            Err(cause) => served.failed.push(Failed { chunk: c, send: s.send, order: s.order, cause }),
        }
    }
    BY_RECEIVER.set(by_receiver);
    served
}

/// The messages of every chunk to the block of receivers starting at slot `first`, put in
/// receiver order into `out` as (chunk, place in its `staged`): a counting sort, so each
/// receiver's stay in sending order and its queue is filled in one go.
fn in_receiver_order<T>(chunks: &[PlannedChunk<T>], first: usize, out: &mut Vec<(u32, u32)>) {
    let b = first / PASS_CHUNK;
    let mut starts = [0u32; PASS_CHUNK + 1];
    for chunk in chunks {
        for s in chunk.block(b) {
            starts[s.receiver as usize - first + 1] += 1;
        }
    }
    for r in 0..PASS_CHUNK {
        starts[r + 1] += starts[r];
    }
    out.clear();
    out.resize(starts[PASS_CHUNK] as usize, (0, 0));
    let mut next = starts;
    for (c, chunk) in chunks.iter().enumerate() {
        let from = chunk.starts[b];
        for (i, s) in chunk.block(b).iter().enumerate() {
            let at = &mut next[s.receiver as usize - first];
            out[*at as usize] = (c as u32, from + i as u32);
            *at += 1;
        }
    }
}

/// A receiver in reach of one of a chunk's sends, grouped by block for
/// [`CommsModel::apply_all`].
#[derive(Debug, Clone, Copy, Default)]
struct Staged {
    receiver: RobotId,
    /// The send's place in its chunk, and the message's among the chunk's messages.
    send: u32,
    order: u32,
    probability: f32,
    at: u64,
}

thread_local! {
    /// Room for one block's messages in receiver order (chunk, place in its `staged`), kept by
    /// each thread between steps.
    static BY_RECEIVER: std::cell::Cell<Vec<(u32, u32)>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A message one block of receivers did not queue: where it was planned, and why.
struct Failed {
    chunk: u32,
    send: u32,
    order: u32,
    cause: DropCause,
}

/// What one block of receivers made of the step's messages: how many it queued, and which it
/// did not.
#[derive(Default)]
struct Served {
    queued: u64,
    failed: Vec<Failed>,
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::comms::model::{CommType, PairParams, SystemParams};

    const BOTH: CommType = CommType { broadcast: true, point_to_point: true };

    fn model(names: &[&str]) -> CommsModel<&'static str> {
        let mut m = CommsModel::new(SystemParams::default(), 8, 1);
        for n in names {
            m.register(n, BOTH).unwrap();
        }
        m
    }

    fn default_pair() -> PairParams {
        PairParams { link: None, range: None, delay: None, probability: None }
    }

    fn identity_holds_stats(s: &crate::comms::CommsStats) -> bool {
        s.sent == s.delivered + s.in_flight + s.dropped_total()
    }

    /// Sealing groups a chunk's receivers by block of slots, and within a block keeps sending
    /// order; the block's messages are then put in receiver order, each receiver's still in
    /// sending order, across chunks.
    #[test]
    fn a_blocks_messages_come_in_receiver_order_each_in_sending_order() {
        let n = PASS_CHUNK as u32 + 3;
        let mut m: CommsModel<u32> = CommsModel::new(SystemParams::default(), 8, 1);
        for i in 0..n {
            m.register(&format!("r{i}"), BOTH).unwrap();
        }
        m.prepare();
        let (last, next_block) = (n - 1, PASS_CHUNK as u32);
        let mut chunks: Vec<PlannedChunk<u32>> = (0..2).map(|_| PlannedChunk::default()).collect();
        // Chunk 0: two sends to robot 2, one to the next block; chunk 1: one more to robot 2,
        // and one to robot 1.
        for (c, to, content) in [(0, 2, 10), (0, next_block, 11), (0, 2, 12), (1, 2, 13), (1, 1, 14)] {
            m.plan(Some(last), To::Robot(Some(to)), 0, &[], |_, _| None, &mut chunks[c], content);
        }
        for chunk in &mut chunks {
            m.seal(chunk);
        }
        let receivers = |chunks: &[PlannedChunk<u32>], first: usize| {
            let mut order = Vec::new();
            in_receiver_order(chunks, first, &mut order);
            order
                .iter()
                .map(|&(c, i)| {
                    let s = chunks[c as usize].staged[i as usize];
                    (s.receiver, chunks[c as usize].plans[s.send as usize].letter.as_ref().unwrap().content)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(receivers(&chunks, 0), vec![(1, 14), (2, 10), (2, 12), (2, 13)]);
        assert_eq!(receivers(&chunks, PASS_CHUNK), vec![(next_block, 11)]);
    }

    #[test]
    fn sends_planned_in_any_order_and_applied_together_give_the_same_result_as_one_by_one() {
        let robots = ["a", "b", "c", "d"];
        let setup = || {
            let mut m = model(&robots);
            m.system.probability = 0.6;
            m.system.delay = 1;
            m.capacity = 5;
            m.prepare();
            m
        };
        let ids = |m: &CommsModel<&'static str>| robots.map(|r| m.id(r));
        let far = |_: RobotId, _: RobotId| Some(1.0);
        let sends: Vec<(usize, To, &str)> = (0..40)
            .map(|i| (i % 4, if i % 3 == 0 { To::Robot(Some(((i + 1) % 4) as RobotId)) } else { To::Broadcast }, "m"))
            .collect();
        let all: Vec<Nearby> = (0..4).map(Nearby::unmeasured).collect();
        // One by one.
        let mut one = setup();
        let by_one: Vec<Sent> = sends.iter().map(|&(s, to, c)| one.send(ids(&one)[s], to, c, 7, &all, far)).collect();
        // All planned first, last to first, then applied together in sending order.
        let mut two = setup();
        let mut chunks: Vec<PlannedChunk<&str>> = (0..sends.len()).map(|_| PlannedChunk::default()).collect();
        for i in (0..sends.len()).rev() {
            let (s, to, c) = sends[i];
            two.plan(ids(&two)[s], to, 7, &all, far, &mut chunks[i], c);
        }
        let by_plan = two.apply_all(7, &mut chunks, &Passes::ONE);
        assert_eq!(by_one, by_plan);
        assert_eq!(one.stats, two.stats);
        assert!(one.stats.dropped.get(DropCause::Lost) > 0 && one.stats.dropped.get(DropCause::InboxFull) > 0);
        for r in robots {
            let got = |m: &mut CommsModel<&'static str>| {
                m.get_messages(r, 8).unwrap().into_iter().map(|m| (m.sender().clone(), m.seq)).collect::<Vec<_>>()
            };
            assert_eq!(got(&mut one), got(&mut two), "{r}");
        }
    }

    /// 1,000 robots on a line, each broadcasting twice a step to its neighbours within 3 m and
    /// sometimes to robot 0, through small lossy queues: the same outcomes, queues and hand-outs
    /// served on one thread and in parallel chunks, and planned in one chunk or in many.
    #[test]
    fn a_step_applied_on_several_threads_is_the_step_applied_on_one() {
        bevy::tasks::ComputeTaskPool::get_or_init(bevy::tasks::TaskPool::new);
        let run = |passes: Passes, senders_per_chunk: u32| {
            let mut m: CommsModel<u32> =
                CommsModel::new(SystemParams { probability: 0.8, range: Some(3.0), delay: 0, link: true }, 6, 5);
            for i in 0..1000 {
                m.register(&format!("r{i}"), BOTH).unwrap();
            }
            m.set_pair("r5", "r6", PairParams { delay: Some(2), ..default_pair() });
            m.prepare();
            let distance = |a: RobotId, b: RobotId| Some((a as f32 - b as f32).abs());
            let mut log = Vec::new();
            for step in 0..5u64 {
                let mut chunks = Vec::new();
                for s in 0..1000u32 {
                    if s % senders_per_chunk == 0 {
                        chunks.push(PlannedChunk::default());
                    }
                    let chunk = chunks.last_mut().unwrap();
                    // Half the candidates bring their distance (as `distance` gives it).
                    let near: Vec<Nearby> = (s.saturating_sub(3)..(s + 4).min(1000))
                        .map(|r| Nearby { id: r, distance: (r % 2 == 0).then(|| distance(s, r)).flatten() })
                        .collect();
                    m.plan(Some(s), To::Broadcast, step, &near, distance, chunk, s);
                    m.plan(Some(s), To::Broadcast, step, &near, distance, chunk, s + 1000);
                    if s % 7 == 0 {
                        m.plan(Some(s), To::Robot(Some(0)), step, &[], distance, chunk, s + 2000);
                    }
                }
                // Sealed where planned, or (every other chunk) left to apply_all.
                for chunk in chunks.iter_mut().step_by(2) {
                    m.seal(chunk);
                }
                let sent = m.apply_all(step, &mut chunks, &passes);
                m.hand_out_all(step, &passes);
                let mut handed = Vec::new();
                for id in 0..1000 {
                    let mut out = Vec::new();
                    m.swap_ready(Some(id), &mut out);
                    handed.push(out.iter().map(|m| (*m.content(), m.seq, m.received_step)).collect::<Vec<_>>());
                }
                log.push((sent, handed));
            }
            (log, m.stats.clone())
        };
        let one = run(Passes::ONE, 1000);
        let stats = &one.1;
        assert!(
            stats.dropped.get(DropCause::Lost) > 1000 && stats.dropped.get(DropCause::InboxFull) > 1000,
            "{stats:?}"
        );
        assert!(stats.in_flight > 0 && stats.delivered > 10_000, "{stats:?}");
        assert!(identity_holds_stats(stats));
        assert!(run(Passes { threads: 2 }, 1000) == one);
        assert!(run(Passes { threads: 8 }, 1000) == one);
        assert!(run(Passes { threads: 2 }, 37) == one);
        assert!(run(Passes::ONE, 1) == one);
    }

    /// A chunk planned into step after step writes a new send over a letter of an earlier one
    /// only when no message holds that letter any more.
    #[test]
    fn a_recycled_chunk_writes_over_only_letters_no_message_holds() {
        let mut m: CommsModel<String> = CommsModel::new(SystemParams::default(), 8, 1);
        for n in ["a", "b", "c"] {
            m.register(n, BOTH).unwrap();
        }
        m.prepare();
        let all: Vec<Nearby> = (0..3).map(Nearby::unmeasured).collect();
        let mut chunk = PlannedChunk::default();
        let step = |m: &mut CommsModel<String>, chunk: &mut PlannedChunk<String>, step: u64, text: &str| {
            chunk.recycle();
            m.plan(m.id("a"), To::Broadcast, step, &all, |_, _| None, chunk, text.to_string());
            let sent = m.apply_all(step, std::slice::from_mut(chunk), &Passes::ONE);
            assert_eq!(sent[0].queued, 2);
            (m.get_messages("b", step).unwrap().remove(0), m.get_messages("c", step).unwrap().remove(0))
        };
        let (one_b, one_c) = step(&mut m, &mut chunk, 0, "one");
        let first = Arc::as_ptr(&one_b.letter);
        drop(one_c);
        // b still holds the first letter: the next send gets a new one, and b's stays as it was.
        let (two_b, two_c) = step(&mut m, &mut chunk, 1, "two");
        assert_ne!(Arc::as_ptr(&two_b.letter), first);
        assert_eq!(
            (one_b.content().as_str(), two_b.content().as_str(), two_c.content().as_str()),
            ("one", "two", "two")
        );
        assert!(two_b.same_send(&two_c) && !two_b.same_send(&one_b));
        // Once no message holds it, the first letter is written over for the next send.
        drop((one_b, two_b, two_c));
        let (three_b, three_c) = step(&mut m, &mut chunk, 2, "three");
        assert_eq!(Arc::as_ptr(&three_b.letter), first);
        assert!(three_b.same_send(&three_c));
        assert_eq!((&**three_c.sender(), three_c.content().as_str(), three_c.seq), ("a", "three", 3));
        // With every message held, it keeps a few times its last step's sends, not every letter
        // it ever made; each message keeps its own.
        let held: Vec<_> = (3..200).map(|s| step(&mut m, &mut chunk, s, &format!("more {s}"))).collect();
        assert!(chunk.spare.len() + chunk.held.len() <= 4 + 64, "{} kept", chunk.spare.len() + chunk.held.len());
        assert!(held.iter().zip(3..).all(|((b, c), s)| b.content() == &format!("more {s}") && b.same_send(c)));
    }
}
