//! What can be wrong with a scene: a problem naming its item, and why a scene file could not be
//! loaded (unreadable, bad syntax with line and column, or inconsistent).

use std::fmt;

/// One semantic problem in a scene, naming the item it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct SceneError {
    /// The item, for example `robot "r1"` or `comms`.
    pub item: String,
    pub message: String,
}

impl fmt::Display for SceneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.item, self.message)
    }
}

/// Why a scene could not be loaded.
#[derive(Debug, Clone, PartialEq)]
pub enum SceneLoadError {
    /// The file could not be read.
    Io { path: String, message: String },
    /// The text is not valid RON for a scene (bad syntax, unknown or missing field, wrong type).
    Syntax { path: String, line: usize, col: usize, message: String },
    /// The scene parsed but is inconsistent; every problem is listed.
    Invalid { path: String, errors: Vec<SceneError> },
}

impl fmt::Display for SceneLoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SceneLoadError::Io { path, message } => write!(f, "{path}: cannot read: {message}"),
            SceneLoadError::Syntax { path, line, col, message } => {
                write!(f, "{path}:{line}:{col}: {message}")
            }
            SceneLoadError::Invalid { path, errors } => {
                for (i, e) in errors.iter().enumerate() {
                    if i > 0 {
                        writeln!(f)?;
                    }
                    write!(f, "{path}: {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for SceneLoadError {}
