//! The JSON of a view's changes, shared by the change feed (`api::changes`, as event data) and
//! webhooks (`api::webhooks`, as request bodies), so that both show a commit alike:
//! - a commit's records: `{"position": n, "records": [...], "deleted": [{"id", "path"}]}`, the
//!   records as the listing shows them (the given columns only), in parts of at most a given
//!   number of records or deleted keys;
//! - the columns: `{"position": n, "columns": [{"id", "name", "type"}]}`.
//!
//! Plain functions over a published view; no I/O.

use serde_json::json;

use super::records::record_body;
use crate::grid::actor::reads::ReadView;
use crate::grid::actor::WrittenRecords;
use crate::grid::feed::Commit;
use crate::grid::schema::ColumnDef;

/// A commit's records and deleted keys as JSON, in parts of at most `part` records or keys
/// (none for an empty commit): the last part completes the commit.
pub fn commit_parts(
    view: &ReadView,
    columns: &[&ColumnDef],
    commit: &Commit,
    part: usize,
) -> Vec<String> {
    let state = &view.state;
    let part = part.max(1);
    let mut parts: Vec<(String, Vec<serde_json::Value>)> = Vec::new();
    for chunk in commit.rows.chunks(part) {
        let records = match WrittenRecords::of(state, columns, chunk.to_vec()) {
            WrittenRecords::Rendered(rendered) => {
                String::from_utf8(rendered.into_array()).unwrap_or_else(|_| "[]".to_owned())
            }
            WrittenRecords::Read(read) => {
                let bodies: Vec<_> = read.iter().map(record_body).collect();
                serde_json::to_string(&bodies).unwrap_or_else(|_| "[]".to_owned())
            }
        };
        parts.push((records, Vec::new()));
    }
    for keys in commit.deleted.chunks(part) {
        let deleted = keys.iter().map(|(path, id)| json!({"id": id, "path": path})).collect();
        parts.push(("[]".to_owned(), deleted));
    }
    parts
        .into_iter()
        .map(|(records, deleted)| {
            let deleted = serde_json::Value::Array(deleted);
            format!(
                "{{\"position\":{},\"records\":{records},\"deleted\":{deleted}}}",
                commit.version
            )
        })
        .collect()
}

/// The columns shown, as of `position`.
pub fn schema_data(position: u32, columns: &[ColumnDef]) -> String {
    let listed: Vec<_> = columns
        .iter()
        .map(|c| json!({"id": c.id, "name": c.name, "type": c.column_type.as_str()}))
        .collect();
    json!({"position": position, "columns": listed}).to_string()
}

/// Whether two lists of columns show the same columns (ids, names, types, in order).
pub fn same_columns(a: &[ColumnDef], b: &[ColumnDef]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.id == y.id && x.name == y.name && x.column_type == y.column_type)
}
