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

    /// A page of one record's entries that pass `keep`, newest first (oldest first when
    /// `oldest_first`), and how many pass in all. Only the page is copied.
    pub fn page_where(
        &self,
        key: &str,
        (offset, limit): (usize, usize),
        oldest_first: bool,
        keep: impl Fn(&HistoryEntry) -> bool,
    ) -> (Vec<HistoryEntry>, usize) {
        let Some(list) = self.entries.get(key) else { return (Vec::new(), 0) };
        let ordered: Box<dyn Iterator<Item = &Arc<HistoryEntry>>> =
            if oldest_first { Box::new(list.iter()) } else { Box::new(list.iter().rev()) };
        let mut total = 0;
        let mut page = Vec::new();
        for entry in ordered.filter(|e| keep(e)) {
            if total >= offset && page.len() < limit {
                page.push((**entry).clone());
            }
            total += 1;
        }
        (page, total)
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

/// One changed cell of a history export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportRow {
    pub record_id: String,
    pub path: String,
    pub column_id: String,
    pub value: CellValue,
    pub statuses: Option<(DependencyStatus, SourceStatus)>,
    pub user: String,
    pub time_ms: i64,
    /// The cell's value in the record's previous entry that had the column (enhanced mode).
    pub previous: Option<CellValue>,
}

/// Which entries and cells an export takes.
#[derive(Debug, Clone)]
pub struct ExportFilter<'a> {
    pub from_ms: i64,
    pub to_ms: i64,
    /// Columns to export, in this order of preference; cells of others are left out.
    pub columns: &'a [String],
    /// Editors to export; all when `None`.
    pub users: Option<&'a [String]>,
}

/// The record id a history key stands for (retired prefix and path removed).
fn record_id_of(key: &str) -> &str {
    let live = match key.strip_prefix(RETIRED) {
        Some(rest) => rest.split_once(RETIRED).map_or(rest, |(_, k)| k),
        None => key,
    };
    live.split_once('\u{0}').map_or(live, |(_, id)| id)
}

impl History {
    /// The cells changed between `from_ms` and `to_ms` (inclusive) by the chosen editors, one
    /// row per cell, oldest first (then by record). Each row carries the value the record's
    /// previous entry gave the column, when it had one.
    pub fn export_rows(&self, filter: &ExportFilter<'_>) -> Vec<ExportRow> {
        let mut rows = Vec::new();
        for (key, list) in self.entries.iter() {
            let mut last: std::collections::HashMap<&str, &CellValue> =
                std::collections::HashMap::new();
            for entry in list.iter() {
                let chosen = (filter.from_ms..=filter.to_ms).contains(&entry.time_ms)
                    && filter.users.is_none_or(|users| users.iter().any(|u| *u == entry.user));
                for cell in &entry.cells {
                    let previous = last.insert(cell.column_id.as_str(), &cell.value);
                    if chosen && filter.columns.contains(&cell.column_id) {
                        rows.push(ExportRow {
                            record_id: record_id_of(key).to_owned(),
                            path: entry.path.clone(),
                            column_id: cell.column_id.clone(),
                            value: cell.value.clone(),
                            statuses: cell.statuses,
                            user: entry.user.clone(),
                            time_ms: entry.time_ms,
                            previous: previous.cloned(),
                        });
                    }
                }
            }
        }
        rows.sort_by_key(|row| row.time_ms);
        rows
    }
}

#[cfg(test)]
mod export_tests {
    use super::*;

    fn entry(time_ms: i64, user: &str, cells: &[(&str, &str)]) -> HistoryEntry {
        HistoryEntry {
            time_ms,
            user: user.into(),
            path: "p".into(),
            cells: cells
                .iter()
                .map(|(c, v)| HistoryCell {
                    column_id: (*c).into(),
                    value: CellValue::Text((*v).into()),
                    statuses: None,
                })
                .collect(),
        }
    }

    #[test]
    fn export_rows_filter_by_time_user_and_column_and_carry_previous_values() {
        let mut history = History::default();
        history.push("r1".into(), entry(10, "ann", &[("a", "one"), ("b", "x")]));
        history.push("r1".into(), entry(20, "bob", &[("a", "two")]));
        history.push(history_key("dir", "r2", true), entry(30, "ann", &[("a", "three")]));
        history.retire("r1");
        let columns = vec!["a".to_owned()];
        let all = history.export_rows(&ExportFilter {
            from_ms: 0,
            to_ms: 100,
            columns: &columns,
            users: None,
        });
        let summary: Vec<(&str, i64, Option<CellValue>)> =
            all.iter().map(|r| (r.record_id.as_str(), r.time_ms, r.previous.clone())).collect();
        assert_eq!(
            summary,
            vec![
                ("r1", 10, None),
                ("r1", 20, Some(CellValue::Text("one".into()))),
                ("r2", 30, None)
            ]
        );
        let users = vec!["bob".to_owned()];
        let bob = history.export_rows(&ExportFilter {
            from_ms: 15,
            to_ms: 25,
            columns: &columns,
            users: Some(&users),
        });
        assert_eq!(bob.len(), 1);
        assert_eq!(bob[0].value, CellValue::Text("two".into()));
    }
}
