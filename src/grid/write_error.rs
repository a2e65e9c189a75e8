//! `WriteError`: why a write of records was refused, as data. Each problem has its code, where
//! it is (a record of the request and, for a cell's problem, which of its cells) and what is
//! wrong; the HTTP answer (`impl Coded`: the first problem's code, several problems listed) and
//! an import task's message (which names the file's columns, `WriteError::summary_naming`) are
//! both rendered from it, never by parsing a message.
//!
//! It holds only what the write itself got wrong: a branch's other refusals and failures (a
//! view it lacks, a busy or closed branch, the WAL) are `GridError`'s, which wraps this one.

use std::fmt;

use crate::error::{Coded, ErrorCode};

/// The problems an error lists (an import may find one per row; the rest are counted).
pub const MAX_PROBLEMS: usize = 100;

/// Where a problem of a write is: the record as the request places it (`records[3]`, `row 7`,
/// `record`) and, for a cell's problem, the cell's index among that record's cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    pub record: String,
    pub cell: Option<usize>,
}

impl At {
    pub fn record(record: &(impl fmt::Display + ?Sized)) -> Option<At> {
        Some(At { record: record.to_string(), cell: None })
    }

    pub fn cell(record: &(impl fmt::Display + ?Sized), cell: usize) -> Option<At> {
        Some(At { record: record.to_string(), cell: Some(cell) })
    }
}

/// `records[i]`: where record `i` of a JSON body is, written out only when a problem names it
/// (a bulk write checks a thousand records that are almost always fine).
#[derive(Debug, Clone, Copy)]
pub struct RecordIndex(pub usize);

impl fmt::Display for RecordIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "records[{}]", self.0)
    }
}

/// `records[3]` or `records[3].cells[1]`.
impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cell {
            Some(cell) => write!(f, "{}.cells[{cell}]", self.record),
            None => f.write_str(&self.record),
        }
    }
}

/// One problem of a write.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub code: ErrorCode,
    pub at: Option<At>,
    /// What is wrong, said without where.
    pub what: String,
}

impl Problem {
    pub fn new(code: ErrorCode, at: Option<At>, what: impl Into<String>) -> Problem {
        Problem { code, at, what: what.into() }
    }

    /// `where: what`, the cell named by `columns[cell]` when given (`row 7, column "English":
    /// ...`), else by its index.
    fn render(&self, columns: Option<&[&str]>) -> String {
        let Some(at) = &self.at else { return self.what.clone() };
        match (at.cell, columns) {
            (Some(cell), Some(columns)) if cell < columns.len() => {
                format!("{}, column \"{}\": {}", at.record, columns[cell], self.what)
            }
            _ => format!("{at}: {}", self.what),
        }
    }
}

/// A refused write: the first `MAX_PROBLEMS` problems found and how many there were. Nothing
/// of the write was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteError {
    pub problems: Vec<Problem>,
    pub found: usize,
}

impl WriteError {
    /// A write refused for one reason that has no place in the request (a body that contradicts
    /// the path, a delete that names its records the wrong way).
    pub fn refused(code: ErrorCode, what: impl Into<String>) -> WriteError {
        WriteError { problems: vec![Problem::new(code, None, what)], found: 1 }
    }

    /// The message that sums the refusal up: the problem itself when there is one, else how
    /// many were found.
    pub fn summary(&self) -> String {
        match self.problems.as_slice() {
            [only] if self.found == 1 => only.render(None),
            _ => format!("{} problems were found; the request changed nothing.", self.found),
        }
    }

    /// Each kept problem's message, cells named by `columns` (the file's columns, by cell
    /// index) when given.
    pub fn messages<'a>(
        &'a self,
        columns: Option<&'a [&'a str]>,
    ) -> impl Iterator<Item = String> + 'a {
        self.problems.iter().map(move |p| p.render(columns))
    }

    /// The summary with its one problem's cell named by `columns` (for a single problem).
    pub fn summary_naming(&self, columns: &[&str]) -> String {
        match self.problems.as_slice() {
            [only] if self.found == 1 => only.render(Some(columns)),
            _ => self.summary(),
        }
    }

    /// Whether it lists its problems one by one (more than one was found).
    pub fn lists_problems(&self) -> bool {
        self.found > 1
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

impl std::error::Error for WriteError {}

/// The HTTP answer: the first problem's code; one problem is the message, several are listed
/// (`listed`) under a summary that counts them all.
impl Coded for WriteError {
    fn code(&self) -> ErrorCode {
        self.problems.first().map_or(ErrorCode::BadRequest, |p| p.code)
    }

    fn listed(&self) -> Vec<String> {
        match self.lists_problems() {
            true => self.messages(None).collect(),
            false => Vec::new(),
        }
    }
}

/// Collects a write's problems as they are found.
#[derive(Debug, Default)]
pub struct Problems {
    kept: Vec<Problem>,
    found: usize,
}

impl Problems {
    pub fn add(&mut self, code: ErrorCode, at: Option<At>, what: impl Into<String>) {
        self.push(Problem::new(code, at, what));
    }

    pub fn push(&mut self, problem: Problem) {
        self.found += 1;
        if self.kept.len() < MAX_PROBLEMS {
            self.kept.push(problem);
        }
    }

    /// `Ok` when none was found, else the refusal.
    pub fn into_result(self) -> Result<(), WriteError> {
        if self.found == 0 {
            return Ok(());
        }
        Err(WriteError { problems: self.kept, found: self.found })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ApiError;

    fn refused(problems: &[(Option<At>, &str)]) -> WriteError {
        let mut found = Problems::default();
        for (at, what) in problems {
            found.add(ErrorCode::BadRequest, at.clone(), *what);
        }
        found.into_result().expect_err("problems were added")
    }

    #[test]
    fn one_problem_is_the_message_and_several_are_listed_under_a_count() {
        let one = ApiError::from(refused(&[(At::cell("records[3]", 1), "bad value.")]));
        assert_eq!(one.message, "records[3].cells[1]: bad value.");
        assert!(one.messages.is_empty());
        let two = ApiError::from(refused(&[
            (At::record("records[0]"), "the record id is empty."),
            (None, "too many."),
        ]));
        assert_eq!(two.message, "2 problems were found; the request changed nothing.");
        assert_eq!(two.messages, ["records[0]: the record id is empty.", "too many."]);
    }

    #[test]
    fn cells_are_named_by_the_columns_given_and_by_index_past_them() {
        let err = refused(&[(At::cell("row 7", 1), "bad."), (At::cell("row 8", 5), "worse.")]);
        let names = ["Record ID", "English"];
        let listed: Vec<String> = err.messages(Some(&names)).collect();
        assert_eq!(listed, ["row 7, column \"English\": bad.", "row 8.cells[5]: worse."]);
        let single = refused(&[(At::cell("row 2", 0), "bad.")]);
        assert_eq!(single.summary_naming(&names), "row 2, column \"Record ID\": bad.");
    }

    #[test]
    fn a_refusal_without_a_place_is_its_message() {
        let err = WriteError::refused(ErrorCode::NonexistentRecordId, "Record \"r\" is gone.");
        assert_eq!((err.code(), err.found), (ErrorCode::NonexistentRecordId, 1));
        let answer = ApiError::from(err);
        assert_eq!(answer, ApiError::new(ErrorCode::NonexistentRecordId, "Record \"r\" is gone."));
    }

    #[test]
    fn more_than_the_kept_problems_are_counted() {
        let mut found = Problems::default();
        for i in 0..MAX_PROBLEMS + 5 {
            found.add(ErrorCode::InvalidRecordId, At::record(&format!("records[{i}]")), "empty.");
        }
        let err = found.into_result().expect_err("refused");
        assert_eq!((err.problems.len(), err.found), (MAX_PROBLEMS, MAX_PROBLEMS + 5));
        assert!(err.summary().starts_with(&format!("{} problems", MAX_PROBLEMS + 5)));
    }
}
