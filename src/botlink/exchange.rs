//! The bot manager's exchange, once per step in the act stage after the skill executors:
//! requests from the panel, the watchdog, the delegate taking the controllers' commands, status
//! requests, the update-all round, the buffered transmitter's flush, delivery by the scene's
//! transport, the simulated bots' ends obeying, and the bots' answers taken — all in robot
//! order, so a run is the same whichever transport carries it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bevy::ecs::query::QueryData;
use bevy::prelude::*;
use bevy::utils::Parallel;

use super::manager::{
    BotManager, Heard, LinkAction, LinkCounters, LinkRequest, RoundPacket, RoundPart, STOP_COMMANDS, change_state,
    delegate, give_up, group_slots, hear, refusal, round_part, send_order, status_command, status_due, watch,
};
use super::packet::{Command, EMPTY_SLOT, UpdateSlot, decode, encode, encode_into};
use super::transmitter::Flushed;
use super::transport::{BotSocket, CentralSocket, join_group, obey, open_central, receive_all, wait_for};
use super::udp::status_of;
use super::{BotLink, LinkChanged, LinkState, Outbox};
use crate::robot::{Battery, BumpSensor, DriveCommand, GripCommand, Gripper, LampState, ReportedPose, Robot};
use crate::scene::schema::Transport;
use crate::scene::{ActiveScene, SceneLoaded};
use crate::sim::{Env, EnvStart, Passes, PerEnv, RobotOrder, SimTime};

/// Bytes of an update-all packet.
const UPDATE_ALL_LEN: usize = super::packet::HEADER_LEN + super::packet::UPDATE_ALL_SLOTS * super::packet::SLOT_LEN;

/// How long the simulated bots' ends wait for datagrams already sent to them on the loopback.
const LOOPBACK_WAIT: Duration = Duration::from_secs(1);

#[derive(QueryData)]
#[query_data(mutable)]
pub(super) struct Bot {
    entity: Entity,
    robot: &'static mut Robot,
    link: &'static mut BotLink,
    outbox: &'static mut Outbox,
    drive: &'static mut DriveCommand,
    grip: &'static mut GripCommand,
    lamp: &'static mut LampState,
    transform: &'static Transform,
    battery: &'static Battery,
    bump: &'static BumpSensor,
    gripper: &'static Gripper,
    socket: Option<&'static mut BotSocket>,
    env: &'static Env,
}

/// Sets up the manager of each environment the scene was just loaded into, and the sockets.
/// (A world of several environments reaches its bots inside the process only: the sockets
/// serve the first.)
pub(super) fn open(
    mut commands: Commands,
    active: Res<ActiveScene>,
    mut managers: ResMut<PerEnv<BotManager>>,
    mut loaded: MessageReader<SceneLoaded>,
    links: Query<(&Robot, &BotLink, Option<&BotSocket>, &Env)>,
) {
    let spec = &active.scene.botlink;
    let mut first = false;
    for env in loaded.read().map(|l| l.env) {
        *managers.reach(env) = BotManager::new(active.scene.dt, spec.status_period);
        first |= env == Env::FIRST;
    }
    if !first {
        return;
    }
    let links = links.iter().filter(|(.., env)| **env == Env::FIRST);
    let links: Vec<_> = links.map(|(robot, link, socket, _)| (robot, link, socket)).collect();
    let needs_udp = spec.transport == Transport::Udp || links.iter().any(|(_, l, _)| l.outside.is_some());
    if !needs_udp {
        commands.insert_resource(CentralSocket::default());
        return;
    }
    let group = spec.multicast.as_deref().and_then(|g| g.parse::<SocketAddr>().ok());
    let mut central = open_central(&spec.address, group);
    for &(robot, link, socket) in &links {
        let address = link.outside.or_else(|| socket.and_then(|s| s.local));
        if let Some(address) = address {
            central.by_address.insert(address, robot.index);
            central.addresses.insert(robot.index, address);
        }
    }
    if let Some(group) = central.group
        && spec.transport == Transport::Udp
    {
        match join_group(&spec.address, group) {
            Ok(receiver) => central.group_receiver = Some(receiver),
            Err(e) => central.fall_back(group, &e),
        }
    }
    if let Some(local) = central.local {
        info!("bot manager on UDP {local}");
    }
    commands.insert_resource(central);
}

/// Where a bot is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    Here,
    /// A simulated bot's own port.
    Port(SocketAddr),
    /// An outside bot.
    Outside(SocketAddr),
}

fn reach(link: &BotLink, index: u32, central: &CentralSocket) -> Reach {
    if link.outside.is_none() && central.addresses.is_empty() {
        return Reach::Here;
    }
    match (link.outside, central.addresses.get(&index)) {
        (Some(a), _) => Reach::Outside(a),
        (None, Some(a)) => Reach::Port(*a),
        (None, None) => Reach::Here,
    }
}

/// The exchange's lists, kept between steps so they are not allocated again.
#[derive(Default)]
pub(super) struct Scratch {
    /// Unicast commands of the pass over the bots: (robot index, command).
    queue: Vec<(u32, Command)>,
    /// The order to send `queue` in: (robot index, place in `queue`).
    queue_order: Vec<(u32, u32)>,
    /// This round's slots by robot index.
    slots: Vec<Option<UpdateSlot>>,
    /// How each bot is reached, by robot index.
    reach: Vec<Reach>,
    /// Unicast commands for bots inside the process, in robot order: (index, command, bytes).
    here: Vec<(u32, Command, usize)>,
    /// Where each robot index's commands start in `here`.
    here_start: Vec<u32>,
    /// The update-all slot each bot inside the process received.
    slot_in: Vec<Option<UpdateSlot>>,
    /// Room for the next round's packets.
    spare: Vec<Vec<u8>>,
    /// What the transmitter let go last step (emptied; kept for its room).
    flushed: Flushed,
    /// Links whose bot did not answer in time while connecting: (robot index, entity).
    gave_up: Vec<(u32, Entity)>,
    /// Links the watchdog dropped to connecting.
    stopped: Vec<Stopped>,
}

/// What one thread of the pass over the bots gathers for the managers, each entry with its
/// bot's environment.
#[derive(Default)]
pub(super) struct Gathered {
    /// Unicast commands: (robot index, command), each bot's in its order.
    queue: Vec<(Env, u32, Command)>,
    /// Round slots: (robot index, slot).
    slots: Vec<(Env, u32, UpdateSlot)>,
    /// Bots not reached inside the process: (robot index, where).
    reach: Vec<(Env, u32, Reach)>,
    /// Links the watchdog dropped to connecting.
    stopped: Vec<(Env, Stopped)>,
    /// Links whose bot did not answer in time while connecting: (robot index, entity).
    gave_up: Vec<(Env, u32, Entity)>,
}

/// A link the watchdog stopped: counted in its own counters, announced and counted in the
/// manager's totals after the pass.
struct Stopped {
    index: u32,
    entity: Entity,
    from: LinkState,
    /// Whether the state machine let it change (else only the stop is counted).
    changed: bool,
}

/// What this step sent over UDP and what the ends and the manager wait for.
#[derive(Default)]
struct Expect {
    /// Datagrams sent to each simulated bot's port.
    at_port: HashMap<u32, u32>,
    /// Update-all packets sent to the group for simulated bots.
    at_group: u32,
    /// Answers due to the manager, by robot index.
    answers: HashMap<u32, u32>,
}

/// The bot managers' step (seed 004), each environment's manager with its own bots, as named
/// steps in the order they run.
#[allow(clippy::too_many_arguments)]
pub(super) fn exchange(
    mut commands: Commands,
    clock: (Res<SimTime>, Res<PerEnv<EnvStart>>),
    active: Res<ActiveScene>,
    order: Res<RobotOrder>,
    passes: Res<Passes>,
    mut managers: ResMut<PerEnv<BotManager>>,
    mut central: ResMut<CentralSocket>,
    mut requests: MessageReader<LinkRequest>,
    mut bots: Query<Bot>,
    names: Query<&Name>,
    mut scratch: Local<Vec<Scratch>>,
    mut gathered: Local<Parallel<Gathered>>,
    mut envs: Local<Vec<BotPass>>,
) {
    let started = Instant::now();
    let spec = &active.scene.botlink;
    let (time, starts) = clock;
    scratch.resize_with(managers.len(), Scratch::default);
    envs.clear();
    envs.extend(managers.iter_mut().map(|(env, m)| {
        let step = starts.step_of(env, time.step);
        BotPass {
            now: step as f64 * time.dt_exact,
            step,
            round: m.clock.step(time.dt),
            bots: order.of(env).len(),
            status_every: m.status_every,
            watchdog: f64::from(spec.watchdog),
            connect_timeout: spec.connect_timeout,
        }
    }));
    take_requests(&mut commands, &mut managers, &envs, &mut requests, &mut bots);
    tend_bots(&mut scratch, &mut gathered, &central, &mut bots, &passes, order.0.len(), &envs);
    for ((env, m), sc) in managers.iter_mut().zip(scratch.iter_mut()) {
        let pass = &envs[env.index()];
        let order = order.of(env);
        announce(&mut commands, m, sc);
        queue_unicast(m, sc);
        if pass.round {
            make_round(m, sc);
        }
        let flushed = flush(m, sc, order, &mut bots, pass.now);
        let mut expect = Expect::default();
        let reply_timeout = spec.reply_timeout;
        let mut packets =
            deliver_unicast(m, sc, &central, order, &mut bots, flushed, pass.step, reply_timeout, &mut expect);
        packets += deliver_round(m, sc, &mut central, order, &mut bots, reply_timeout, &mut expect);
        if !sc.here.is_empty() || pass.round {
            serve_bots_here(&mut commands, m, sc, order, &mut bots, &names, pass);
        }
        if !expect.at_port.is_empty() || expect.at_group > 0 {
            simulated_ends_over_udp(m, &central, order, &mut bots, &names, &expect);
        }
        take_answers(&mut commands, m, &central, order, &mut bots, &expect, reply_timeout, pass.now);
        if pass.round {
            m.timing.add(started.elapsed().as_secs_f64(), packets);
        }
    }
    if envs.iter().any(|pass| pass.round) {
        obey_round_slots(&scratch, &envs, &mut bots);
    }
}

/// What every bot's part of the pass needs to know of this step, for each environment.
pub(super) struct BotPass {
    /// The environment's own simulated seconds and step.
    now: f64,
    step: u64,
    round: bool,
    /// The environment's robots.
    bots: usize,
    status_every: u64,
    watchdog: f64,
    connect_timeout: f32,
}

/// The panel's requests: connect, disconnect, reconnect, motor parameters.
fn take_requests(
    commands: &mut Commands,
    managers: &mut PerEnv<BotManager>,
    envs: &[BotPass],
    requests: &mut MessageReader<LinkRequest>,
    bots: &mut Query<Bot>,
) {
    for r in requests.read() {
        let Ok(mut b) = bots.get_mut(r.bot) else { continue };
        let (Some(m), Some(pass)) = (managers.0.get_mut(b.env.index()), envs.get(b.env.index())) else { continue };
        if !b.link.managed {
            continue;
        }
        let connect_by = pass.now + f64::from(pass.connect_timeout);
        let index = b.robot.index;
        let link = &mut *b.link;
        match r.action {
            LinkAction::Connect => connect(commands, m, r.bot, index, link, connect_by),
            LinkAction::Disconnect => disconnect(commands, m, r.bot, index, link),
            LinkAction::Reconnect => {
                disconnect(commands, m, r.bot, index, link);
                connect(commands, m, r.bot, index, link, connect_by);
            }
            LinkAction::Motor { max_speed, max_turn } => {
                link.motor = (max_speed, max_turn);
                if link.state == LinkState::Online {
                    m.send(index, &Command::MotorParams { max_speed, max_turn });
                }
            }
        }
    }
}

/// The watchdog, the connect timeout, the delegate, the status requests and the round, bot by
/// bot: a parallel pass over the bots of every environment, in which each bot changes only its
/// own link and outbox, and what goes to its manager is gathered per thread (and put in robot
/// order by [`gather`]).
fn tend_bots(
    scratch: &mut [Scratch],
    gathered: &mut Parallel<Gathered>,
    central: &CentralSocket,
    bots: &mut Query<Bot>,
    passes: &Passes,
    n: usize,
    envs: &[BotPass],
) {
    for (sc, pass) in scratch.iter_mut().zip(envs) {
        sc.queue.clear();
        sc.slots.clear();
        sc.slots.resize(pass.bots, None);
        sc.reach.clear();
        sc.reach.resize(pass.bots, Reach::Here);
    }
    let threads = &*gathered;
    passes.each_mut_with(
        n,
        bots,
        || threads.borrow_local_mut(),
        |g, mut b| {
            let (index, env) = (b.robot.index, *b.env);
            if let Some(pass) = envs.get(env.index())
                && b.link.managed
                && (index as usize) < pass.bots
            {
                tend_bot(g, &mut b, env, index, central, pass);
            }
        },
    );
    gather(scratch, gathered);
}

/// One bot's part of [`tend_bots`].
#[inline]
fn tend_bot(g: &mut Gathered, b: &mut BotItem, env: Env, index: u32, central: &CentralSocket, pass: &BotPass) {
    let to = reach(&b.link, index, central);
    if to != Reach::Here {
        g.reach.push((env, index, to));
    }
    let entity = b.entity;
    let link = &mut *b.link;
    if let Some(stop) = watch(link, pass.now, pass.watchdog) {
        g.stopped.push((env, Stopped { index, entity, from: stop.from, changed: stop.changed }));
    }
    if give_up(link, pass.now, pass.connect_timeout) {
        g.gave_up.push((env, index, entity));
    }
    delegate(link, b.outbox.commands.drain(..), |c| g.queue.push((env, index, c)));
    if status_due(pass.step, index, pass.status_every)
        && let Some(command) = status_command(link.state)
    {
        g.queue.push((env, index, command));
    }
    if pass.round {
        match round_part(link, index) {
            RoundPart::Slot(slot) => {
                g.slots.push((env, index, slot));
                // Counted here, where the link is at hand anyway: inside the process every
                // round packet reaches its bots.
                if to == Reach::Here {
                    link.counters.sent.update_all.add(UPDATE_ALL_LEN);
                    link.packets_sent += 1;
                }
            }
            RoundPart::Stop => g.queue.extend(STOP_COMMANDS.map(|c| (env, index, c))),
            RoundPart::Nothing => {}
        }
    }
}

/// What the threads of [`tend_bots`] gathered, put in place in each environment's scratch: the
/// unicast queue, the round's slots and where each bot is reached; the links given up and
/// stopped, to be announced.
fn gather(scratch: &mut [Scratch], gathered: &mut Parallel<Gathered>) {
    for g in gathered.iter_mut() {
        for (env, index, command) in g.queue.drain(..) {
            scratch[env.index()].queue.push((index, command));
        }
        for (env, index, slot) in g.slots.drain(..) {
            scratch[env.index()].slots[index as usize] = Some(slot);
        }
        for (env, index, to) in g.reach.drain(..) {
            scratch[env.index()].reach[index as usize] = to;
        }
        for (env, index, entity) in g.gave_up.drain(..) {
            scratch[env.index()].gave_up.push((index, entity));
        }
        for (env, stopped) in g.stopped.drain(..) {
            scratch[env.index()].stopped.push(stopped);
        }
    }
}

/// The links that changed in the pass, announced and counted in the manager's totals in robot
/// order: the bots that never answered (sent nothing more), then the watchdog's stops.
fn announce(commands: &mut Commands, m: &mut BotManager, sc: &mut Scratch) {
    sc.gave_up.sort_unstable_by_key(|(index, _)| *index);
    for (index, entity) in sc.gave_up.drain(..) {
        m.transmitter.forget(index);
        commands.trigger(LinkChanged { bot: entity, from: LinkState::Connecting, to: LinkState::Offline });
        m.totals.state_changes += 1;
        m.totals.connect_failures += 1;
    }
    sc.stopped.sort_by_key(|s| s.index);
    for Stopped { entity, from, changed, .. } in sc.stopped.drain(..) {
        if changed {
            commands.trigger(LinkChanged { bot: entity, from, to: LinkState::Connecting });
            m.totals.state_changes += 1;
        }
        m.totals.watchdog_stops += 1;
    }
}

/// The pass's unicast commands into the transmitter, in [`send_order`].
fn queue_unicast(m: &mut BotManager, sc: &mut Scratch) {
    send_order(&sc.queue, &mut sc.queue_order);
    for &(index, place) in &sc.queue_order {
        m.send(index, &sc.queue[place as usize].1);
    }
    sc.queue.clear();
}

/// The update-all round: every connected bot's slot, five to a packet in robot order (last
/// round's packets lend their room).
fn make_round(m: &mut BotManager, sc: &mut Scratch) {
    sc.spare.extend(m.round.drain(..).map(|p| p.bytes));
    m.rounds += 1;
    let (round, spare) = (&mut m.round, &mut sc.spare);
    group_slots(sc.slots.iter().flatten().copied(), |packet| {
        let mut bytes = spare.pop().unwrap_or_default();
        encode_into(&Command::UpdateAll(packet), &mut bytes);
        round.push(RoundPacket { bytes });
    });
}

/// The buffered transmitter lets go what its duplicate rule allows; the duplicates it held or
/// dropped are counted for their bots.
fn flush(m: &mut BotManager, sc: &mut Scratch, order: &[Entity], bots: &mut Query<Bot>, now: f64) -> Flushed {
    // Last step's lists lend their room.
    let mut flushed = std::mem::take(&mut sc.flushed);
    flushed.sent.clear();
    flushed.held.clear();
    flushed.dropped.clear();
    m.transmitter.flush(now, &mut flushed);
    for (bots_of, held) in [(&flushed.held, true), (&flushed.dropped, false)] {
        for &index in bots_of {
            let counters = |c: &mut LinkCounters| {
                if held { c.duplicates_held += 1 } else { c.duplicates_dropped += 1 }
            };
            counters(&mut m.totals);
            if let Some(mut b) = bot_at(order, bots, index) {
                counters(&mut b.link.counters);
            }
        }
    }
    flushed
}

/// Unicast delivery by the scene's transport: over UDP at once (few bots; counted in what the
/// ends and the manager wait for), inside the process into per-bot lists that
/// [`serve_bots_here`] takes. Returns the packets.
#[allow(clippy::too_many_arguments)]
fn deliver_unicast(
    m: &mut BotManager,
    sc: &mut Scratch,
    central: &CentralSocket,
    order: &[Entity],
    bots: &mut Query<Bot>,
    mut flushed: Flushed,
    step: u64,
    reply_timeout: f32,
    expect: &mut Expect,
) -> u64 {
    let mut packets = 0u64;
    sc.here.clear();
    for (index, bytes) in flushed.sent.drain(..) {
        let Some(&to) = sc.reach.get(index as usize) else { continue };
        packets += 1;
        m.totals.sent.unicast.add(bytes.len());
        let command = decode(&bytes).ok();
        match to {
            Reach::Here => {
                if let Some(command) = command {
                    sc.here.push((index, command, bytes.len()));
                }
            }
            Reach::Port(address) | Reach::Outside(address) => {
                let Some(mut b) = bot_at(order, bots, index) else { continue };
                b.link.counters.sent.unicast.add(bytes.len());
                if let Some(command) = &command {
                    b.link.remember(step, command.clone(), bytes.len());
                }
                if let Err(e) = central.send(&bytes, address) {
                    sent_error(&mut m.totals, &mut b.link, e);
                    continue;
                }
                if b.link.outside.is_some() {
                    *expect.answers.entry(index).or_default() += u32::from(awaited(&b.link, reply_timeout));
                } else {
                    *expect.at_port.entry(index).or_default() += 1;
                    if matches!(command, Some(Command::Ping | Command::StatusRequest)) {
                        *expect.answers.entry(index).or_default() += 1;
                    }
                }
            }
        }
    }
    sc.flushed = flushed;
    packets
}

/// The round's packets: their slots for bots inside the process noted for
/// [`serve_bots_here`], each packet with slots for bots over UDP sent to the group (or, without
/// one, to each such bot). Returns the packets.
fn deliver_round(
    m: &mut BotManager,
    sc: &mut Scratch,
    central: &mut CentralSocket,
    order: &[Entity],
    bots: &mut Query<Bot>,
    reply_timeout: f32,
    expect: &mut Expect,
) -> u64 {
    let mut packets = 0u64;
    sc.slot_in.clear();
    sc.slot_in.resize(sc.reach.len(), None);
    let round_packets = std::mem::take(&mut m.round);
    for RoundPacket { bytes } in &round_packets {
        packets += 1;
        let Ok(Command::UpdateAll(slots)) = decode(bytes) else { continue };
        let mut here = false;
        let mut far: Vec<(u32, SocketAddr)> = Vec::new();
        for slot in slots.iter().filter(|s| s.bot != EMPTY_SLOT) {
            let index = u32::from(slot.bot);
            match sc.reach.get(index as usize) {
                Some(Reach::Here) => {
                    here = true;
                    sc.slot_in[index as usize] = Some(*slot);
                }
                Some(Reach::Port(a) | Reach::Outside(a)) => far.push((index, *a)),
                None => {}
            }
        }
        if here {
            m.totals.sent.update_all.add(bytes.len());
        }
        if !far.is_empty() {
            send_round_packet(m, central, order, bots, bytes, &far, reply_timeout, expect);
        }
    }
    m.round = round_packets;
    packets
}

/// One round packet to the bots over UDP whose slots it carries (`far`): by multicast when the
/// group takes it, else by unicast to each.
#[allow(clippy::too_many_arguments)]
fn send_round_packet(
    m: &mut BotManager,
    central: &mut CentralSocket,
    order: &[Entity],
    bots: &mut Query<Bot>,
    bytes: &[u8],
    far: &[(u32, SocketAddr)],
    reply_timeout: f32,
    expect: &mut Expect,
) {
    let mut group_sent = false;
    let mut sim_by_group = false;
    if let Some(group) = central.group {
        match central.send(bytes, group) {
            Ok(()) => {
                group_sent = true;
                m.totals.sent.multicast.add(bytes.len());
            }
            Err(e) => central.fall_back(group, &e),
        }
    }
    for &(index, address) in far {
        let Some(mut b) = bot_at(order, bots, index) else { continue };
        let outside = b.link.outside.is_some();
        b.link.packets_sent += 1;
        if group_sent {
            b.link.counters.sent.multicast.add(bytes.len());
            sim_by_group |= !outside && central.group_receiver.is_some();
        } else {
            if let Err(e) = central.send(bytes, address) {
                sent_error(&mut m.totals, &mut b.link, e);
                continue;
            }
            m.totals.sent.update_all_unicast.add(bytes.len());
            b.link.counters.sent.update_all_unicast.add(bytes.len());
            if !outside {
                *expect.at_port.entry(index).or_default() += 1;
            }
        }
        if outside && awaited(&b.link, reply_timeout) {
            *expect.answers.entry(index).or_default() += 1;
        }
    }
    if group_sent && sim_by_group {
        expect.at_group += 1;
    }
}

/// The simulated bots inside the process take what was sent to them, in one pass; what they
/// answer is taken by the manager at once.
#[allow(clippy::too_many_arguments)]
/// The rounds' slots, every environment's in one pass over the bots: a bot with nothing else
/// sent to it this step only sets its drive, gripper and lamp from its slot (the others took
/// theirs in [`serve_bots_here`], after their commands). On this thread: a few stores per bot,
/// which on the pool cost more than they gained (the hand-off, and the commands moving between
/// the cores' caches): the transmit stage about 0.1 ms longer at 10,000 robots.
fn obey_round_slots(scratch: &[Scratch], envs: &[BotPass], bots: &mut Query<Bot>) {
    for mut b in bots.iter_mut() {
        let (i, env) = (b.robot.index as usize, b.env.index());
        let (Some(sc), Some(pass)) = (scratch.get(env), envs.get(env)) else { continue };
        if pass.round
            && i < sc.reach.len()
            && sc.here_start[i] == sc.here_start[i + 1]
            && let Some(slot) = sc.slot_in[i]
        {
            obey_slot(&mut b, slot);
        }
    }
}

fn serve_bots_here(
    commands: &mut Commands,
    m: &mut BotManager,
    sc: &mut Scratch,
    order: &[Entity],
    bots: &mut Query<Bot>,
    names: &Query<&Name>,
    pass: &BotPass,
) {
    let (step, now) = (pass.step, pass.now);
    let n = sc.reach.len();
    // Where each bot's unicast commands start in `here` (sorted by robot index).
    sc.here_start.clear();
    sc.here_start.resize(n + 1, 0);
    for (index, _, _) in &sc.here {
        sc.here_start[*index as usize + 1] += 1;
    }
    for i in 0..n {
        sc.here_start[i + 1] += sc.here_start[i];
    }
    // The bots with unicast commands, in robot order: the commands, then the round's slot;
    // what they answer is taken by the manager at once.
    let mut k = 0;
    while k < sc.here.len() {
        let index = sc.here[k].0;
        let i = index as usize;
        let end = sc.here_start[i + 1] as usize;
        let bot = bot_at(order, bots, index);
        if let Some(mut b) = bot.filter(|b| b.link.managed && b.robot.index == index && sc.reach[i] == Reach::Here) {
            for (_, command, len) in &sc.here[k..end] {
                b.link.counters.sent.unicast.add(*len);
                b.link.remember(step, command.clone(), *len);
                let b = &mut b;
                if obey(index, command, &mut b.robot, &mut b.drive, &mut b.grip, &mut b.lamp) {
                    let status = encode(&status_of(&b.robot, b.transform, b.battery, b.bump, b.gripper, names));
                    m.totals.received.add(status.len());
                    take_answer(commands, m, b.entity, &mut b.link, &status, now);
                }
            }
            if let Some(slot) = sc.slot_in[i] {
                obey_slot(&mut b, slot);
            }
        }
        k = end;
    }
}

/// The bots' answers over UDP: the simulated bots' within the loopback wait, the outside bots'
/// within the reply timeout (lock-step with the simulation); a bot that owed answers and did not
/// give them is lagging. Each answer is then taken as it came.
#[allow(clippy::too_many_arguments)]
fn take_answers(
    commands: &mut Commands,
    m: &mut BotManager,
    central: &CentralSocket,
    order: &[Entity],
    bots: &mut Query<Bot>,
    expect: &Expect,
    reply_timeout: f32,
    now: f64,
) {
    let mut arrived: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    if !expect.answers.is_empty() {
        let outside_wait = Duration::from_secs_f32(reply_timeout);
        let mut heard: HashMap<u32, u32> = HashMap::new();
        let sim_only = expect.answers.keys().all(|i| !is_outside(bots, order, *i));
        let timeout = if sim_only { LOOPBACK_WAIT } else { outside_wait.max(Duration::from_millis(1)) };
        wait_for(timeout, || {
            let from = arrived.len();
            central.receive(&mut arrived);
            for (address, _) in &arrived[from..] {
                if let Some(i) = central.by_address.get(address) {
                    *heard.entry(*i).or_default() += 1;
                }
            }
            expect.answers.iter().all(|(i, n)| heard.get(i).copied().unwrap_or(0) >= *n)
        });
        for (index, n) in &expect.answers {
            if heard.get(index).copied().unwrap_or(0) < *n
                && let Some(mut b) = bot_at(order, bots, *index)
            {
                b.link.counters.replies_missed += 1;
                m.totals.replies_missed += 1;
                b.link.lagging = true;
            }
        }
    } else {
        central.receive(&mut arrived);
    }
    for (from, bytes) in arrived {
        m.totals.received.add(bytes.len());
        let index = central.by_address.get(&from).copied();
        let Some(mut b) = index.and_then(|i| bot_at(order, bots, i)) else {
            m.totals.refuse(refusal::UNKNOWN_SENDER);
            continue;
        };
        let entity = b.entity;
        take_answer(commands, m, entity, &mut b.link, &bytes, now);
    }
}

/// The bot of robot index `index`.
fn bot_at<'a, 's>(order: &[Entity], bots: &'a mut Query<'_, 's, Bot>, index: u32) -> Option<BotItem<'a, 's>> {
    order.get(index as usize).and_then(|&e| bots.get_mut(e).ok())
}

/// A simulated bot inside the process obeys the update-all packet that carried its slot (the
/// other slots are for other bots and do not touch it).
fn obey_slot(b: &mut BotItem, slot: UpdateSlot) {
    let mut slots = [UpdateSlot::EMPTY; super::packet::UPDATE_ALL_SLOTS];
    slots[0] = slot;
    obey(b.robot.index, &Command::UpdateAll(slots), &mut b.robot, &mut b.drive, &mut b.grip, &mut b.lamp);
}

/// Whether the manager waits for this outside bot's answers after the round: the scene asks
/// for waiting, the bot is connected and it answered in time last round (one that fell silent
/// costs one reply timeout, not one a round until the watchdog notices).
fn awaited(link: &BotLink, reply_timeout: f32) -> bool {
    reply_timeout > 0.0 && link.state == LinkState::Online && !link.lagging
}

fn is_outside(bots: &Query<Bot>, order: &[Entity], index: u32) -> bool {
    order.get(index as usize).and_then(|&e| bots.get(e).ok()).is_some_and(|b| b.link.outside.is_some())
}

fn sent_error(totals: &mut LinkCounters, link: &mut BotLink, e: String) {
    totals.send_errors += 1;
    link.counters.send_errors += 1;
    if link.last_error.as_deref() != Some(e.as_str()) {
        warn!("bot {}: {e}", link.announced_name);
    }
    link.last_error = Some(e);
}

/// The simulated bots' ends over UDP: read what was sent to their ports and to the group, obey,
/// and answer from their ports.
fn simulated_ends_over_udp(
    m: &mut BotManager,
    central: &CentralSocket,
    order: &[Entity],
    bots: &mut Query<Bot>,
    names: &Query<&Name>,
    expect: &Expect,
) {
    let Some(manager_address) = central.local else { return };
    let mut got: HashMap<u32, u32> = HashMap::new();
    let mut group_got = 0u32;
    let complete = wait_for(LOOPBACK_WAIT, || {
        for &index in expect.at_port.keys() {
            let Some(mut b) = order.get(index as usize).and_then(|&e| bots.get_mut(e).ok()) else { continue };
            let Some(socket) = b.socket.as_mut().and_then(|s| s.socket.take()) else { continue };
            receive_all(&socket, |_, bytes| {
                *got.entry(index).or_default() += 1;
                if let Ok(command) = decode(bytes) {
                    let b = &mut b;
                    if obey(index, &command, &mut b.robot, &mut b.drive, &mut b.grip, &mut b.lamp) {
                        let status = status_of(&b.robot, b.transform, b.battery, b.bump, b.gripper, names);
                        let _ = socket.send_to(&encode(&status), manager_address);
                    }
                }
            });
            if let Some(s) = b.socket.as_mut() {
                s.socket = Some(socket);
            }
        }
        if let Some(receiver) = &central.group_receiver {
            receive_all(receiver, |_, bytes| {
                group_got += 1;
                let Ok(command) = decode(bytes) else { return };
                let Command::UpdateAll(slots) = &command else { return };
                for s in slots.iter().filter(|s| s.bot != EMPTY_SLOT) {
                    let index = u32::from(s.bot);
                    if let Some(mut b) = order.get(index as usize).and_then(|&e| bots.get_mut(e).ok())
                        && b.link.outside.is_none()
                    {
                        let b = &mut b;
                        obey(index, &command, &mut b.robot, &mut b.drive, &mut b.grip, &mut b.lamp);
                    }
                }
            });
        }
        group_got >= expect.at_group && expect.at_port.iter().all(|(i, n)| got.get(i).copied().unwrap_or(0) >= *n)
    });
    if !complete {
        m.totals.replies_missed += 1;
    }
}

/// Takes one packet a bot sent: a status makes a connecting bot connected (its motor
/// parameters then go out) and feeds the watchdog.
fn take_answer(commands: &mut Commands, m: &mut BotManager, bot: Entity, link: &mut BotLink, bytes: &[u8], now: f64) {
    link.counters.received.add(bytes.len());
    let index = link.index;
    if link.state == LinkState::Offline {
        link.counters.refuse(refusal::OFFLINE);
        m.totals.refuse(refusal::OFFLINE);
        return;
    }
    match hear(index, bytes) {
        Heard::Status(status) => {
            link.counters.statuses += 1;
            m.totals.statuses += 1;
            link.last_packet_s = now;
            link.last_status = Some(status);
            link.fresh_status = true;
            link.lagging = false;
            if link.state == LinkState::Connecting {
                link.connect_by_s = None;
                change_state(commands, bot, link, LinkState::Online, &mut m.totals);
                let (max_speed, max_turn) = link.motor;
                m.send(index, &Command::MotorParams { max_speed, max_turn });
            }
        }
        Heard::Malformed(e) => {
            link.counters.malformed += 1;
            m.totals.malformed += 1;
            link.last_error = Some(format!("malformed packet: {e}"));
        }
        Heard::Refused(reason) => {
            link.counters.refuse(reason);
            m.totals.refuse(reason);
        }
    }
}

/// Starts connecting to an offline bot: a ping now, and until `by` (simulated seconds) for its
/// answer.
fn connect(commands: &mut Commands, m: &mut BotManager, bot: Entity, index: u32, link: &mut BotLink, by: f64) {
    if link.state == LinkState::Offline {
        link.connect_by_s = Some(by);
        change_state(commands, bot, link, LinkState::Connecting, &mut m.totals);
        m.send(index, &Command::Ping);
    }
}

fn disconnect(commands: &mut Commands, m: &mut BotManager, bot: Entity, index: u32, link: &mut BotLink) {
    if link.state != LinkState::Offline {
        link.connect_by_s = None;
        m.transmitter.forget(index);
        m.send(index, &Command::Disconnect);
        change_state(commands, bot, link, LinkState::Offline, &mut m.totals);
    }
}

/// An outside bot's newest status becomes its pose and battery here (its body is kinematic).
pub(super) fn apply_reports(mut bots: Query<(&mut BotLink, &mut Transform, &mut Battery), With<ReportedPose>>) {
    for (mut link, mut transform, mut battery) in &mut bots {
        if !link.fresh_status {
            continue;
        }
        link.fresh_status = false;
        let Some(s) = link.last_status.as_ref() else { continue };
        transform.translation = Vec3::new(s.x, s.y, transform.translation.z);
        transform.rotation = Quat::from_rotation_z(s.heading);
        battery.charge = (s.battery * battery.capacity).clamp(0.0, battery.capacity);
    }
}
