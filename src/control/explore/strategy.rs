//! Exploration strategies (the seed's Strategy pattern): given the mental map and where the robot
//! stands, the moves towards the next cell to explore.

use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;

use rand::RngExt;

use super::map::{Cell, CellState, Dir, MentalMap, Move};
use crate::sim::rng::SimRng;

/// Chooses where to explore next.
pub trait Strategy: Send + Sync + Debug {
    fn name(&self) -> &'static str;
    /// Moves from `at` facing `dir` towards an unexplored cell, ending with the move into it; or
    /// `None` when no reachable unexplored cell is left.
    fn plan(&mut self, map: &MentalMap, at: Cell, dir: Dir) -> Option<Vec<Move>>;
}

/// Explores in rings of growing distance from the den: the unexplored cell nearest the den
/// (Chebyshev rings) among those reachable through known free cells, the fewest moves first.
/// Paths go through known free cells only, never through obstacle or danger cells.
#[derive(Debug, Default, Clone)]
pub struct Rings;

/// Fewest moves from `(at, dir)` to every unexplored cell reachable through free cells.
pub fn moves_to_frontier(map: &MentalMap, at: Cell, dir: Dir) -> HashMap<Cell, Vec<Move>> {
    let mut parent: HashMap<(Cell, Dir), Option<((Cell, Dir), Move)>> = HashMap::new();
    let mut queue = VecDeque::new();
    parent.insert((at, dir), None);
    queue.push_back((at, dir));
    let mut targets: HashMap<Cell, Vec<Move>> = HashMap::new();
    let path_to = |parent: &HashMap<(Cell, Dir), Option<((Cell, Dir), Move)>>, mut s: (Cell, Dir)| {
        let mut moves = Vec::new();
        while let Some(Some((prev, m))) = parent.get(&s) {
            moves.push(*m);
            s = *prev;
        }
        moves.reverse();
        moves
    };
    while let Some((c, d)) = queue.pop_front() {
        let ahead = c.step(d);
        if map.get(ahead) == CellState::Unexplored && !targets.contains_key(&ahead) {
            let mut moves = path_to(&parent, (c, d));
            moves.push(Move::Forward);
            targets.insert(ahead, moves);
        }
        for (m, next) in [(Move::Forward, (ahead, d)), (Move::Left, (c, d.left())), (Move::Right, (c, d.right()))] {
            if m == Move::Forward && !map.passable(ahead) {
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(slot) = parent.entry(next) {
                slot.insert(Some(((c, d), m)));
                queue.push_back(next);
            }
        }
    }
    targets
}

impl Strategy for Rings {
    fn name(&self) -> &'static str {
        "rings"
    }

    fn plan(&mut self, map: &MentalMap, at: Cell, dir: Dir) -> Option<Vec<Move>> {
        let ring = |c: Cell| (c.x - map.den.x).abs().max((c.y - map.den.y).abs());
        moves_to_frontier(map, at, dir)
            .into_iter()
            .min_by_key(|(c, moves)| (ring(*c), moves.len(), *c))
            .map(|(_, moves)| moves)
    }
}

/// A random walk for comparison: a random move each time, never into a known obstacle or
/// danger cell.
#[derive(Debug, Clone)]
pub struct RandomWalk {
    pub rng: SimRng,
}

impl Strategy for RandomWalk {
    fn name(&self) -> &'static str {
        "random"
    }

    fn plan(&mut self, map: &MentalMap, at: Cell, dir: Dir) -> Option<Vec<Move>> {
        if map.frontier().is_empty() {
            return None;
        }
        let ahead = map.get(at.step(dir));
        let forward_ok = matches!(ahead, CellState::Free | CellState::Unexplored);
        let choice = self.rng.random_range(0..if forward_ok { 4 } else { 2 });
        Some(vec![match choice {
            0 => Move::Left,
            1 => Move::Right,
            _ => Move::Forward,
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::stream;

    fn open_map() -> MentalMap {
        let mut m = MentalMap::new(5, 5, Cell::new(0, 0));
        for x in 0..3 {
            m.set(Cell::new(x, 0), CellState::Free);
        }
        m
    }

    #[test]
    fn rings_explores_nearest_the_den_first() {
        let m = open_map();
        // From (2,0) facing east the nearest-ring unexplored cells are (-1,0), (0,1), (1,1).
        let moves = Rings.plan(&m, Cell::new(2, 0), Dir::East).unwrap();
        let (mut c, mut d) = (Cell::new(2, 0), Dir::East);
        for mv in &moves {
            (c, d) = mv.apply(c, d);
        }
        assert_eq!(c.x.max(c.y).max(-c.x), 1, "ring 1 target, got {c:?}");
        assert_eq!(*moves.last().unwrap(), Move::Forward);
    }

    #[test]
    fn rings_never_plans_through_obstacles_or_danger() {
        let mut m = MentalMap::new(4, 1, Cell::new(0, 0));
        m.set(Cell::new(1, 0), CellState::Obstacle);
        m.set(Cell::new(0, 1), CellState::Danger);
        m.set(Cell::new(-1, 0), CellState::Obstacle);
        m.set(Cell::new(0, -1), CellState::Obstacle);
        // Boxed in: nothing reachable.
        assert_eq!(Rings.plan(&m, Cell::new(0, 0), Dir::East), None);
    }

    #[test]
    fn after_hitting_an_obstacle_the_next_excursion_differs() {
        let mut m = open_map();
        let first = Rings.plan(&m, Cell::new(0, 0), Dir::North).unwrap();
        assert_eq!(first, vec![Move::Forward], "straight into (0,1)");
        m.set(Cell::new(0, 1), CellState::Obstacle);
        let second = Rings.plan(&m, Cell::new(0, 0), Dir::South).unwrap();
        let (mut c, mut d) = (Cell::new(0, 0), Dir::South);
        for mv in &second {
            (c, d) = mv.apply(c, d);
            assert_ne!(c, Cell::new(0, 1));
        }
        assert_ne!(c, Cell::new(0, 1), "another target");
    }

    #[test]
    fn random_walk_avoids_known_obstacles_and_stops_when_done() {
        let mut m = MentalMap::new(2, 1, Cell::new(0, 0));
        m.set(Cell::new(1, 0), CellState::Obstacle);
        let mut walk = RandomWalk { rng: stream(1, "explore", 0) };
        for _ in 0..100 {
            let moves = walk.plan(&m, Cell::new(0, 0), Dir::East).unwrap();
            assert_ne!(moves, vec![Move::Forward]);
        }
        for c in [Cell::new(-1, 0), Cell::new(0, 1), Cell::new(0, -1), Cell::new(1, 1), Cell::new(1, -1)] {
            m.set(c, CellState::Obstacle);
        }
        assert_eq!(walk.plan(&m, Cell::new(0, 0), Dir::East), None);
    }
}
