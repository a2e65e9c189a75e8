//! Record history: every change of a record appends an entry with the cells as they became.
//! Listed newest first. Owned by the grid actor with the rest of the branch.
//!
//! The entries of a deleted record are kept (for exports) under a retired key,
//! `\u{1}<n>\u{1}<key>`, so a record later added or renamed to the same id starts a new
//! history. Retired keys are plain keys to snapshots, which therefore keep them unchanged.

use std::sync::Arc;

use super::value::{CellValue, DependencyStatus, SourceStatus};

/// One cell as a change left it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryCell {
    pub column_id: String,
    pub value: CellValue,
    /// Present for language columns.
    pub statuses: Option<(DependencyStatus, SourceStatus)>,
}

/// One change of one record.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    pub time_ms: i64,
    pub user: String,
    pub path: String,
    pub cells: Vec<HistoryCell>,
}

/// Marks the key of a deleted record's entries.
const RETIRED: char = '\u{1}';

/// Entries per record key (the id, or path and id in grids identified by both), in persistent
/// structures: a clone (taken for each snapshot) shares everything and costs O(1).
#[derive(Debug, Clone, Default)]
pub struct History {
    entries: imbl::OrdMap<String, imbl::Vector<Arc<HistoryEntry>>>,
    count: usize,
}

/// The key a record's history is kept under.
pub fn history_key(path: &str, id: &str, by_path: bool) -> String {
    if by_path {
        format!("{path}\u{0}{id}")
    } else {
        id.to_owned()
    }
}

impl History {
    pub fn push(&mut self, key: String, entry: HistoryEntry) {
        let mut list = self.entries.get(&key).cloned().unwrap_or_default();
        list.push_back(Arc::new(entry));
        self.entries.insert(key, list);
        self.count += 1;
    }

    /// Moves a record's history when it is renamed or moved.
    pub fn rename(&mut self, from: &str, to: String) {
        if let Some(moved) = self.entries.remove(from) {
            let mut list = self.entries.get(&to).cloned().unwrap_or_default();
            list.append(moved);
            self.entries.insert(to, list);
        }
    }

    /// Moves a deleted record's entries out of the way of a later record with the same key.
    /// The retired key depends only on the entries held, so replaying the same ops (or loading
    /// a snapshot and replaying the rest) retires to the same key.
    pub fn retire(&mut self, key: &str) {
        let Some(list) = self.entries.remove(key) else { return };
        let retired = (0u64..)
            .map(|n| format!("{RETIRED}{n}{RETIRED}{key}"))
            .find(|k| !self.entries.contains_key(k))
            .expect("some retired key is free");
        self.entries.insert(retired, list);
    }

    /// A page of a record's entries, newest first, and how many there are.
    pub fn page(&self, key: &str, offset: usize, limit: usize) -> (Vec<HistoryEntry>, usize) {
        match self.entries.get(key) {
            Some(list) => (
                list.iter().rev().skip(offset).take(limit).map(|e| (**e).clone()).collect(),
                list.len(),
            ),
            None => (Vec::new(), 0),
        }
    }

    /// Every entry with its record key: keys in order, each key's entries oldest first.
    pub fn all(&self) -> impl Iterator<Item = (&str, &HistoryEntry)> {
        self.entries.iter().flat_map(|(k, list)| list.iter().map(move |e| (k.as_str(), e.as_ref())))
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}
