//! The cautious explorer's world model (seed 002), as plain types: the robot-unit grid, the move
//! language, path reversal and the mental map.

use std::fmt::Write as _;

/// A cell of the robot-unit grid. `(0, 0)` is the arena's bottom-left cell; the map keeps a ring
/// of cells around the floor (index -1 and `cols`/`rows`) where walls are met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    pub x: i32,
    pub y: i32,
}

impl Cell {
    pub const fn new(x: i32, y: i32) -> Self {
        Self { x, y }
    }

    pub fn step(self, dir: Dir) -> Cell {
        let (dx, dy) = dir.delta();
        Cell::new(self.x + dx, self.y + dy)
    }
}

/// A grid heading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    East,
    North,
    West,
    South,
}

impl Dir {
    pub const ALL: [Dir; 4] = [Dir::East, Dir::North, Dir::West, Dir::South];

    pub fn delta(self) -> (i32, i32) {
        match self {
            Dir::East => (1, 0),
            Dir::North => (0, 1),
            Dir::West => (-1, 0),
            Dir::South => (0, -1),
        }
    }

    /// 90° counter-clockwise.
    pub fn left(self) -> Dir {
        match self {
            Dir::East => Dir::North,
            Dir::North => Dir::West,
            Dir::West => Dir::South,
            Dir::South => Dir::East,
        }
    }

    pub fn right(self) -> Dir {
        self.left().left().left()
    }

    pub fn opposite(self) -> Dir {
        self.left().left()
    }

    /// Heading in radians (East is 0, counter-clockwise).
    pub fn angle(self) -> f32 {
        match self {
            Dir::East => 0.0,
            Dir::North => std::f32::consts::FRAC_PI_2,
            Dir::West => std::f32::consts::PI,
            Dir::South => -std::f32::consts::FRAC_PI_2,
        }
    }

    /// The grid heading nearest to an angle in radians.
    pub fn nearest(angle: f32) -> Dir {
        let quarter = (angle / std::f32::consts::FRAC_PI_2).round() as i32;
        match quarter.rem_euclid(4) {
            0 => Dir::East,
            1 => Dir::North,
            2 => Dir::West,
            _ => Dir::South,
        }
    }
}

/// The move language: whole robot units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Move {
    Forward,
    Backward,
    Left,
    Right,
}

impl Move {
    /// Where a move takes a robot at `cell` facing `dir`.
    pub fn apply(self, cell: Cell, dir: Dir) -> (Cell, Dir) {
        match self {
            Move::Forward => (cell.step(dir), dir),
            Move::Backward => (cell.step(dir.opposite()), dir),
            Move::Left => (cell, dir.left()),
            Move::Right => (cell, dir.right()),
        }
    }

    /// The move that undoes this one after a half turn: turns swap, straight moves stay.
    pub fn mirrored(self) -> Move {
        match self {
            Move::Left => Move::Right,
            Move::Right => Move::Left,
            m => m,
        }
    }

    pub fn letter(self) -> char {
        match self {
            Move::Forward => 'w',
            Move::Backward => 's',
            Move::Left => 'l',
            Move::Right => 'r',
        }
    }
}

/// The way home: turn 180° (two lefts), then the outbound moves in reverse order with left and
/// right swapped. Outbound `forward, left, forward, forward` returns as
/// `left, left, forward, forward, right, forward`.
pub fn return_path(outbound: &[Move]) -> Vec<Move> {
    let mut path = vec![Move::Left, Move::Left];
    path.extend(outbound.iter().rev().map(|m| m.mirrored()));
    path
}

/// What the robot knows of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellState {
    Unexplored,
    Free,
    Obstacle,
    /// Seen by a sonar: to be avoided.
    Danger,
}

/// The mental map: a grid of cell states over the floor and a ring around it, with the den.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MentalMap {
    /// Floor cells across and up; the map also holds the ring at -1 and `cols`/`rows`.
    pub cols: i32,
    pub rows: i32,
    pub den: Cell,
    cells: Vec<CellState>,
}

impl MentalMap {
    /// An unexplored map of `cols × rows` floor cells with the den (known free) at `den`.
    pub fn new(cols: i32, rows: i32, den: Cell) -> Self {
        let mut map = Self { cols, rows, den, cells: vec![CellState::Unexplored; ((cols + 2) * (rows + 2)) as usize] };
        map.set(den, CellState::Free);
        map
    }

    fn index(&self, c: Cell) -> Option<usize> {
        let (x, y) = (c.x + 1, c.y + 1);
        (x >= 0 && y >= 0 && x < self.cols + 2 && y < self.rows + 2).then(|| (y * (self.cols + 2) + x) as usize)
    }

    /// The state of a cell; beyond the ring everything counts as an obstacle.
    pub fn get(&self, c: Cell) -> CellState {
        self.index(c).map_or(CellState::Obstacle, |i| self.cells[i])
    }

    pub fn set(&mut self, c: Cell, s: CellState) {
        if let Some(i) = self.index(c) {
            self.cells[i] = s;
        }
    }

    /// Can be moved through: known free.
    pub fn passable(&self, c: Cell) -> bool {
        self.get(c) == CellState::Free
    }

    /// Every cell of the map, ring included, row by row from the bottom.
    pub fn cells(&self) -> impl Iterator<Item = (Cell, CellState)> + '_ {
        (-1..=self.rows).flat_map(move |y| (-1..=self.cols).map(move |x| Cell::new(x, y))).map(|c| (c, self.get(c)))
    }

    pub fn count(&self, s: CellState) -> usize {
        self.cells.iter().filter(|c| **c == s).count()
    }

    /// Unexplored cells next to a known free cell: where exploring can go on.
    pub fn frontier(&self) -> Vec<Cell> {
        self.cells()
            .filter(|(c, s)| *s == CellState::Unexplored && Dir::ALL.iter().any(|d| self.passable(c.step(*d))))
            .map(|(c, _)| c)
            .collect()
    }

    /// Merges what another robot learned: obstacles and danger win over anything but the den.
    pub fn merge_obstacle(&mut self, c: Cell) {
        if c != self.den {
            self.set(c, CellState::Obstacle);
        }
    }

    /// One character per cell, top row first: `D` den, `R` robot, `.` free, `#` obstacle,
    /// `!` danger, `?` unexplored.
    pub fn to_text(&self, robot: Option<Cell>) -> String {
        let mut s = String::new();
        for y in (-1..=self.rows).rev() {
            for x in -1..=self.cols {
                let c = Cell::new(x, y);
                let ch = if Some(c) == robot {
                    'R'
                } else if c == self.den {
                    'D'
                } else {
                    match self.get(c) {
                        CellState::Unexplored => '?',
                        CellState::Free => '.',
                        CellState::Obstacle => '#',
                        CellState::Danger => '!',
                    }
                };
                s.push(ch);
            }
            let _ = writeln!(s);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Move::*;

    #[test]
    fn return_path_of_the_seed_example() {
        assert_eq!(return_path(&[Forward, Left, Forward, Forward]), vec![Left, Left, Forward, Forward, Right, Forward]);
    }

    #[test]
    fn the_return_path_brings_the_robot_home() {
        let outbound = [Forward, Left, Forward, Forward, Right, Forward, Right, Right, Forward, Left, Forward];
        let (mut cell, mut dir) = (Cell::new(0, 0), Dir::South);
        for m in outbound {
            (cell, dir) = m.apply(cell, dir);
        }
        for m in return_path(&outbound) {
            (cell, dir) = m.apply(cell, dir);
        }
        assert_eq!((cell, dir), (Cell::new(0, 0), Dir::North));
    }

    #[test]
    fn turns_and_headings() {
        assert_eq!(Dir::South.left(), Dir::East);
        assert_eq!(Dir::South.right(), Dir::West);
        assert_eq!(Dir::nearest(-1.6), Dir::South);
        assert_eq!(Dir::nearest(3.1), Dir::West);
        assert_eq!(Dir::nearest(-3.1), Dir::West);
    }

    #[test]
    fn map_text_and_frontier() {
        let mut m = MentalMap::new(3, 2, Cell::new(0, 1));
        m.set(Cell::new(1, 1), CellState::Free);
        m.set(Cell::new(2, 1), CellState::Obstacle);
        m.set(Cell::new(1, 0), CellState::Danger);
        assert_eq!(m.to_text(Some(Cell::new(1, 1))), "?????\n?DR#?\n??!??\n?????\n");
        let mut f = m.frontier();
        f.sort();
        assert_eq!(f, vec![Cell::new(-1, 1), Cell::new(0, 0), Cell::new(0, 2), Cell::new(1, 2)]);
        assert_eq!(m.get(Cell::new(9, 9)), CellState::Obstacle);
    }
}
