//! Paths (decisions.md section 13): a branch's folder tree and the changes to it.
//!
//! A folder is a `/`-separated path. It exists while a live record's path names it or a folder
//! under it, or while the branch keeps it (`Schema::paths`). A record's stored path may carry
//! stray slashes (`/a//b/`); the tree reads it as its segments (`a/b`), and a move rewrites it
//! so.
//!
//! The tree lists folders depth first: among siblings, the kept ones in the order
//! `Schema::paths` holds them, then the others in the order of the first record (by row) under
//! each. A change of the tree keeps the whole tree it leaves, in its order (so after the first
//! change every folder is kept, as folders are in the hosted service: a folder stays when its
//! last record goes, until it is deleted). A change is planned here as ops the actor commits as
//! one WAL entry: the new kept list (`GridOp::SetPaths`), and the records moved
//! (`UpdateRecords` with `new_path`) or deleted.

use std::collections::{HashMap, HashSet};

use super::ops::{GridOp, GridState, RecordWrite};
use crate::error::{Coded, ErrorCode};

/// Most characters in one folder name.
pub const MAX_NAME_CHARS: usize = 255;
/// Most levels of folders.
pub const MAX_DEPTH: usize = 32;
/// Most folders a branch keeps (`Schema::paths`), and most names one request creates or moves.
pub const MAX_KEPT: usize = 10_000;

/// Why a path change or read was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{0}")]
    Invalid(String),
    #[error("Path \"{0}\" could not be found.")]
    NotFound(String),
    #[error("Path \"{0}\" already exists.")]
    Exists(String),
}

impl Coded for PathError {
    fn code(&self) -> ErrorCode {
        match self {
            PathError::Invalid(_) => ErrorCode::BadRequest,
            PathError::NotFound(_) => ErrorCode::PathIsNotFound,
            PathError::Exists(_) => ErrorCode::IdAlreadyExists,
        }
    }
}

fn invalid(message: impl Into<String>) -> PathError {
    PathError::Invalid(message.into())
}

/// The segments of a stored path (empty ones dropped).
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// A stored path as a folder: its segments joined by `/`.
fn folder_of(path: &str) -> String {
    segments(path).collect::<Vec<_>>().join("/")
}

/// `a/b` -> `a`; a top folder's parent is the root, `""`.
fn parent_of(folder: &str) -> &str {
    folder.rsplit_once('/').map_or("", |(parent, _)| parent)
}

fn name_of(folder: &str) -> &str {
    folder.rsplit_once('/').map_or(folder, |(_, name)| name)
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}/{name}")
    }
}

/// Whether `path` (a folder) is `folder` or inside it.
fn within(path: &str, folder: &str) -> bool {
    path == folder || path.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/'))
}

/// `folder` and each of its ancestors, deepest first (`a/b/c`, `a/b`, `a`).
fn self_and_ancestors(folder: &str) -> impl Iterator<Item = &str> {
    let cuts = folder.match_indices('/').map(|(at, _)| at).collect::<Vec<_>>();
    std::iter::once(folder).chain(cuts.into_iter().rev().map(move |at| &folder[..at]))
}

/// Folders moved, old -> new, looked up by any path inside them (at most `MAX_DEPTH` lookups).
struct Renames<'a> {
    /// In the order the request named them.
    moves: &'a [(String, String)],
    forward: HashMap<&'a str, &'a str>,
    backward: HashMap<&'a str, &'a str>,
}

impl<'a> Renames<'a> {
    fn of(moves: &'a [(String, String)]) -> Renames<'a> {
        Renames {
            moves,
            forward: moves.iter().map(|(o, n)| (o.as_str(), n.as_str())).collect(),
            backward: moves.iter().map(|(o, n)| (n.as_str(), o.as_str())).collect(),
        }
    }

    fn through(map: &HashMap<&str, &str>, path: &str) -> Option<String> {
        let root = self_and_ancestors(path).find(|f| map.contains_key(f))?;
        Some(format!("{}{}", map[root], &path[root.len()..]))
    }

    /// The new path of a folder inside a moved one.
    fn new_of(&self, old: &str) -> Option<String> {
        Self::through(&self.forward, old)
    }

    /// The old path of a folder inside a moved one, by its new path.
    fn old_of(&self, new: &str) -> Option<String> {
        Self::through(&self.backward, new)
    }

    /// Whether `folder` is itself one of the moved folders.
    fn moves(&self, folder: &str) -> bool {
        self.forward.contains_key(folder)
    }
}

/// A folder name as a request gives it: non-empty, no `/` or `\`, not too long.
pub fn check_name(name: &str) -> Result<&str, PathError> {
    let name = name.trim();
    if name.is_empty() || name.contains(['/', '\\']) || name.chars().count() > MAX_NAME_CHARS {
        return Err(invalid(format!(
            "A path name is 1 to {MAX_NAME_CHARS} characters without / or \\: {name:?} is not."
        )));
    }
    Ok(name)
}

/// A folder path as a request gives it (`""`, `/` or absent: the root), its segments checked.
pub fn check_path(path: &str) -> Result<String, PathError> {
    let names: Vec<&str> = segments(path).map(check_name).collect::<Result<_, _>>()?;
    if names.len() > MAX_DEPTH {
        return Err(invalid(format!("A path has at most {MAX_DEPTH} levels.")));
    }
    Ok(names.join("/"))
}

/// One folder of the tree as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathNode {
    pub name: String,
    pub parent_path: String,
}

/// The branch's folders in tree order (parents before children), built once per read or change.
#[derive(Clone)]
pub struct Tree {
    /// Children of each folder (`""`: the root), in order.
    children: HashMap<String, Vec<String>>,
    folders: HashSet<String>,
}

impl Tree {
    pub fn of(state: &GridState) -> Tree {
        let mut tree = Tree { children: HashMap::new(), folders: HashSet::new() };
        for kept in &state.schema.paths {
            tree.insert(kept);
        }
        for path in state.store.distinct_paths() {
            let folder = folder_of(path);
            if !folder.is_empty() {
                tree.insert(&folder);
            }
        }
        tree
    }

    /// Adds a folder and its parents, each after its siblings so far.
    fn insert(&mut self, folder: &str) {
        let mut at = String::new();
        for name in segments(folder) {
            let next = join(&at, name);
            if self.folders.insert(next.clone()) {
                self.children.entry(at.clone()).or_default().push(next.clone());
            }
            at = next;
        }
    }

    pub fn contains(&self, folder: &str) -> bool {
        folder.is_empty() || self.folders.contains(folder)
    }

    /// The folders under `root` (not `root` itself), depth first.
    pub fn under(&self, root: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut stack: Vec<&str> = Vec::new();
        stack.extend(self.children_of(root).iter().rev().map(String::as_str));
        while let Some(folder) = stack.pop() {
            out.push(folder);
            stack.extend(self.children_of(folder).iter().rev().map(String::as_str));
        }
        out
    }

    /// The children of `parent`, in order.
    fn children_of(&self, parent: &str) -> &[String] {
        self.children.get(parent).map_or(&[], Vec::as_slice)
    }
}

/// The tree under `root` as the API lists it (404 for a root that is no folder).
pub fn tree(state: &GridState, root: &str) -> Result<Vec<PathNode>, PathError> {
    let root = check_path(root)?;
    let tree = Tree::of(state);
    if !tree.contains(&root) {
        return Err(PathError::NotFound(root));
    }
    let nodes = tree.under(&root).into_iter().map(|folder| PathNode {
        name: name_of(folder).to_owned(),
        parent_path: parent_of(folder).to_owned(),
    });
    Ok(nodes.collect())
}

/// A change to the folder tree.
#[derive(Debug, Clone)]
pub enum PathChange {
    /// New empty folders `names` under `parent`.
    Create { parent: String, names: Vec<String> },
    /// Folders and everything in them, records included.
    Delete { paths: Vec<String> },
    /// Folders `names` of `from` into `to`, placed before or after a sibling there (else last).
    Move {
        names: Vec<String>,
        from: String,
        to: String,
        before: Option<String>,
        after: Option<String>,
    },
    /// A folder given a new name in its parent.
    Rename { path: String, new_name: String },
}

/// What a planned change commits and answers (the folders it made or moved, as full paths).
#[derive(Debug)]
pub struct PlannedPaths {
    pub ops: Vec<GridOp>,
    pub paths: Vec<String>,
}

/// Plans a change; `(user, time_ms)` stamp the records it moves.
pub fn plan(
    state: &GridState,
    change: PathChange,
    stamp: (&str, i64),
) -> Result<PlannedPaths, PathError> {
    let tree = Tree::of(state);
    match change {
        PathChange::Create { parent, names } => plan_create(&tree, &parent, &names),
        PathChange::Delete { paths } => plan_delete(state, &tree, &paths),
        PathChange::Move { names, from, to, before, after } => {
            let placing = Placing { before, after };
            plan_move(state, &tree, (&from, &names), (&to, placing), stamp)
        }
        PathChange::Rename { path, new_name } => {
            let path = check_path(&path)?;
            if path.is_empty() {
                return Err(invalid("The root path cannot be renamed."));
            }
            let new_name = check_name(&new_name)?.to_owned();
            plan_rename(state, &tree, &path, &new_name, stamp)
        }
    }
}

fn check_count(n: usize, what: &str) -> Result<(), PathError> {
    if n == 0 || n > MAX_KEPT {
        return Err(invalid(format!("{what} names 1 to {MAX_KEPT} paths.")));
    }
    Ok(())
}

/// The kept list after a change, refused past `MAX_KEPT`.
fn set_paths(kept: Vec<String>) -> Result<GridOp, PathError> {
    if kept.len() > MAX_KEPT {
        return Err(invalid(format!(
            "A grid has at most {MAX_KEPT} paths once its paths are changed."
        )));
    }
    Ok(GridOp::SetPaths { paths: kept })
}

fn plan_create(tree: &Tree, parent: &str, names: &[String]) -> Result<PlannedPaths, PathError> {
    check_count(names.len(), "paths")?;
    let parent = check_path(parent)?;
    if !tree.contains(&parent) {
        return Err(PathError::NotFound(parent));
    }
    if segments(&parent).count() >= MAX_DEPTH {
        return Err(invalid(format!("A path has at most {MAX_DEPTH} levels.")));
    }
    let mut grown = tree.clone();
    let mut made = Vec::with_capacity(names.len());
    for name in names {
        let folder = join(&parent, check_name(name)?);
        if grown.contains(&folder) {
            return Err(PathError::Exists(folder));
        }
        grown.insert(&folder);
        made.push(folder);
    }
    let kept = grown.under("").into_iter().map(str::to_owned).collect();
    Ok(PlannedPaths { ops: vec![set_paths(kept)?], paths: made })
}

fn plan_delete(
    state: &GridState,
    tree: &Tree,
    paths: &[String],
) -> Result<PlannedPaths, PathError> {
    check_count(paths.len(), "paths")?;
    let mut gone = Vec::with_capacity(paths.len());
    for path in paths {
        let folder = check_path(path)?;
        if folder.is_empty() {
            return Err(invalid("The root path cannot be deleted."));
        }
        if !tree.contains(&folder) {
            return Err(PathError::NotFound(folder));
        }
        gone.push(folder);
    }
    let gone_set: HashSet<&str> = gone.iter().map(String::as_str).collect();
    let inside = |folder: &str| self_and_ancestors(folder).any(|f| gone_set.contains(f));
    let store = &state.store;
    let doomed: HashSet<&str> =
        store.distinct_paths().into_iter().filter(|p| inside(&folder_of(p))).collect();
    let keys: Vec<(String, String)> = store
        .live_rows()
        .filter(|row| doomed.contains(store.path(*row)))
        .map(|row| (store.path(row).to_owned(), store.id(row).to_owned()))
        .collect();
    let kept: Vec<String> =
        tree.under("").into_iter().filter(|p| !inside(p)).map(str::to_owned).collect();
    let mut ops = vec![set_paths(kept)?];
    if !keys.is_empty() {
        ops.push(GridOp::DeleteRecords { keys });
    }
    Ok(PlannedPaths { ops, paths: gone })
}

/// Where moved folders go among their new siblings.
#[derive(Debug, Clone, Default)]
struct Placing {
    before: Option<String>,
    after: Option<String>,
}

fn plan_move(
    state: &GridState,
    tree: &Tree,
    (from, names): (&str, &[String]),
    (to, placing): (&str, Placing),
    stamp: (&str, i64),
) -> Result<PlannedPaths, PathError> {
    check_count(names.len(), "names")?;
    let (from, to) = (check_path(from)?, check_path(to)?);
    for folder in [&from, &to] {
        if !tree.contains(folder) {
            return Err(PathError::NotFound(folder.clone()));
        }
    }
    let mut moves = Vec::with_capacity(names.len());
    let mut taken = HashSet::new();
    for name in names {
        let name = check_name(name)?;
        let (old, new) = (join(&from, name), join(&to, name));
        if !tree.contains(&old) {
            return Err(PathError::NotFound(old));
        }
        if within(&to, &old) {
            return Err(invalid(format!("Path \"{old}\" cannot be moved into itself.")));
        }
        if !taken.insert(new.clone()) || (old != new && tree.contains(&new)) {
            return Err(PathError::Exists(new));
        }
        moves.push((old, new));
    }
    let anchor = placing_anchor(tree, &to, &placing, &moves)?;
    plan_relocation(state, tree, &moves, (&to, anchor), stamp)
}

fn plan_rename(
    state: &GridState,
    tree: &Tree,
    path: &str,
    new_name: &str,
    stamp: (&str, i64),
) -> Result<PlannedPaths, PathError> {
    if !tree.contains(path) {
        return Err(PathError::NotFound(path.to_owned()));
    }
    let parent = parent_of(path).to_owned();
    let new = join(&parent, new_name);
    if new != path && tree.contains(&new) {
        return Err(PathError::Exists(new));
    }
    // Renamed in place: it keeps its place among its siblings.
    let moves = [(path.to_owned(), new)];
    plan_relocation(state, tree, &moves, (&parent, Anchor::InPlace), stamp)
}

/// Where relocated folders go among the destination's children.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Anchor {
    Before(String),
    After(String),
    Last,
    /// Each where it was (a rename).
    InPlace,
}

/// The anchor `placing` names: a sibling in `to` (not one of those moved), not both sides.
fn placing_anchor(
    tree: &Tree,
    to: &str,
    placing: &Placing,
    moves: &[(String, String)],
) -> Result<Anchor, PathError> {
    let sibling = |name: &str| -> Result<String, PathError> {
        let folder = join(to, check_name(name)?);
        if !tree.children_of(to).contains(&folder) || moves.iter().any(|(o, _)| *o == folder) {
            return Err(invalid(format!(
                "\"{name}\" is not a path under \"{to}\" that is not moved."
            )));
        }
        Ok(folder)
    };
    let blank = |v: &Option<String>| {
        v.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    match (blank(&placing.before), blank(&placing.after)) {
        (Some(_), Some(_)) => Err(invalid("Give moveBefore or moveAfter, not both.")),
        (Some(name), None) => Ok(Anchor::Before(sibling(&name)?)),
        (None, Some(name)) => Ok(Anchor::After(sibling(&name)?)),
        (None, None) => Ok(Anchor::Last),
    }
}

/// Moves folders (`(old, new)` full paths) and everything under them into `to`: the records'
/// paths rewritten, the kept list rewritten, and the destination's children written into the
/// kept list in their new order.
fn plan_relocation(
    state: &GridState,
    tree: &Tree,
    moves: &[(String, String)],
    (to, anchor): (&str, Anchor),
    (user, time_ms): (&str, i64),
) -> Result<PlannedPaths, PathError> {
    let renames = Renames::of(moves);
    let store = &state.store;
    let moved: HashMap<&str, String> = store
        .distinct_paths()
        .into_iter()
        .filter_map(|p| Some((p, renames.new_of(&folder_of(p))?)))
        .collect();
    let records: Vec<RecordWrite> = store
        .live_rows()
        .filter_map(|row| {
            let new_path = moved.get(store.path(row))?.clone();
            Some(RecordWrite {
                id: store.id(row).to_owned(),
                path: store.path(row).to_owned(),
                new_id: None,
                new_path: Some(new_path),
                cells: Vec::new(),
                mark_mt: false,
            })
        })
        .collect();
    let kept = relocated_tree(tree, &renames, to, &anchor);
    let mut ops = vec![set_paths(kept)?];
    if !records.is_empty() {
        ops.push(GridOp::UpdateRecords { time_ms, user: user.to_owned(), records });
    }
    Ok(PlannedPaths { ops, paths: moves.iter().map(|(_, new)| new.clone()).collect() })
}

/// Every folder after the move, depth first (full new paths).
fn relocated_tree(tree: &Tree, renames: &Renames<'_>, to: &str, anchor: &Anchor) -> Vec<String> {
    let children = |parent: &str| -> Vec<String> {
        if parent == to {
            return sibling_order(tree, renames, to, anchor);
        }
        let old = renames.old_of(parent).unwrap_or_else(|| parent.to_owned());
        let children = tree.children_of(&old).iter().filter(|c| !renames.moves(c));
        children.map(|c| renames.new_of(c).unwrap_or_else(|| c.clone())).collect()
    };
    let mut out = Vec::new();
    let mut stack: Vec<String> = children("").into_iter().rev().collect();
    while let Some(folder) = stack.pop() {
        stack.extend(children(&folder).into_iter().rev());
        out.push(folder);
    }
    out
}

/// The destination's children after the move, in order (full new paths).
fn sibling_order(tree: &Tree, renames: &Renames<'_>, to: &str, anchor: &Anchor) -> Vec<String> {
    let renamed = |c: &String| renames.new_of(c).unwrap_or_else(|| c.clone());
    if *anchor == Anchor::InPlace {
        return tree.children_of(to).iter().map(renamed).collect();
    }
    let stay: Vec<&String> = tree.children_of(to).iter().filter(|c| !renames.moves(c)).collect();
    let moved = renames.moves.iter().map(|(_, new)| new.clone());
    let at = match anchor {
        Anchor::Before(sibling) => stay.iter().position(|c| *c == sibling),
        Anchor::After(sibling) => stay.iter().position(|c| *c == sibling).map(|i| i + 1),
        Anchor::Last | Anchor::InPlace => None,
    }
    .unwrap_or(stay.len());
    let mut order: Vec<String> = stay[..at].iter().map(|c| (*c).clone()).collect();
    order.extend(moved);
    order.extend(stay[at..].iter().map(|c| (*c).clone()));
    order
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::grid::store::RecordIdentity;

    fn state_with(paths: &[&str]) -> GridState {
        let mut state = GridState::new("view1", Vec::new(), RecordIdentity::RecordId);
        let records = paths
            .iter()
            .enumerate()
            .map(|(i, path)| RecordWrite {
                id: format!("r{i}"),
                path: (*path).to_owned(),
                new_id: None,
                new_path: None,
                cells: Vec::new(),
                mark_mt: false,
            })
            .collect();
        state.apply(&GridOp::AddRecords { time_ms: 1, user: "u".into(), records });
        state
    }

    fn apply(state: &mut GridState, change: PathChange) -> Result<Vec<String>, PathError> {
        let planned = plan(state, change, ("u", 2))?;
        for op in &planned.ops {
            state.apply(op);
        }
        Ok(planned.paths)
    }

    fn listing(state: &GridState) -> Vec<String> {
        Tree::of(state).under("").into_iter().map(str::to_owned).collect()
    }

    #[test]
    fn folders_come_from_record_paths_in_first_appearance_order() {
        let state = state_with(&["b/x", "", "a", "/b//y/", "b/x/deep"]);
        assert_eq!(listing(&state), ["b", "b/x", "b/x/deep", "b/y", "a"]);
        assert_eq!(tree(&state, "b/x").expect("found").len(), 1);
        assert_eq!(tree(&state, "c"), Err(PathError::NotFound("c".into())));
    }

    #[test]
    fn a_move_rewrites_the_paths_under_it_and_places_it() {
        let mut state = state_with(&["a/x", "a/x/y", "b", "c"]);
        let change = PathChange::Move {
            names: vec!["x".into()],
            from: "a".into(),
            to: "".into(),
            before: Some("b".into()),
            after: None,
        };
        assert_eq!(apply(&mut state, change), Ok(vec!["x".into()]));
        assert_eq!(listing(&state), ["a", "x", "x/y", "b", "c"]);
        let paths: Vec<&str> = state.store.live_rows().map(|r| state.store.path(r)).collect();
        assert_eq!(paths, ["x", "x/y", "b", "c"]);
    }

    #[derive(Debug, Clone)]
    enum Step {
        Create(usize, u8),
        Delete(usize),
        Move(usize, usize, Option<usize>),
        Rename(usize, u8),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0..8usize, 0..4u8).prop_map(|(p, n)| Step::Create(p, n)),
            (0..8usize).prop_map(Step::Delete),
            (0..8usize, 0..8usize, proptest::option::of(0..8usize))
                .prop_map(|(a, b, c)| Step::Move(a, b, c)),
            (0..8usize, 0..4u8).prop_map(|(p, n)| Step::Rename(p, n)),
        ]
    }

    fn change_of(step: &Step, folders: &[String]) -> Option<PathChange> {
        let pick = |i: usize| folders.get(i % folders.len().max(1)).cloned().unwrap_or_default();
        let name = |n: u8| format!("n{n}");
        Some(match step {
            Step::Create(p, n) => PathChange::Create { parent: pick(*p), names: vec![name(*n)] },
            Step::Delete(p) => PathChange::Delete { paths: vec![pick(*p)] },
            Step::Move(a, b, c) => {
                let moved = pick(*a);
                let to = pick(*b);
                let before = c.map(|c| name_of(&pick(c)).to_owned());
                PathChange::Move {
                    names: vec![name_of(&moved).to_owned()],
                    from: parent_of(&moved).to_owned(),
                    to,
                    before,
                    after: None,
                }
            }
            Step::Rename(p, n) => PathChange::Rename { path: pick(*p), new_name: name(*n) },
        })
    }

    proptest! {
        /// Whatever folder changes are accepted or refused, the tree lists each folder once,
        /// parents first, every record's folder is in it, and only deletes remove records.
        #[test]
        fn changes_keep_the_tree_whole(steps in proptest::collection::vec(step(), 1..25)) {
            let mut state = state_with(&["a/b", "a/c", "d", "a/b/e", "", "d/f"]);
            for step in &steps {
                let folders = listing(&state);
                let before = state.store.len();
                let Some(change) = change_of(step, &folders) else { continue };
                let deletes = matches!(change, PathChange::Delete { .. });
                if apply(&mut state, change).is_err() {
                    prop_assert_eq!(listing(&state), folders, "a refused change changes nothing");
                    continue;
                }
                if !deletes {
                    prop_assert_eq!(state.store.len(), before);
                }
                let now = listing(&state);
                let unique: HashSet<&String> = now.iter().collect();
                prop_assert_eq!(unique.len(), now.len());
                for (i, folder) in now.iter().enumerate() {
                    let parent = parent_of(folder);
                    prop_assert!(parent.is_empty() || now[..i].iter().any(|f| f == parent));
                }
                for row in state.store.live_rows().collect::<Vec<_>>() {
                    let folder = folder_of(state.store.path(row));
                    prop_assert!(folder.is_empty() || unique.contains(&folder));
                }
            }
        }
    }
}
