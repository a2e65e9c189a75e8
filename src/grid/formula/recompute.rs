//! Keeping a branch's formula cells true: after a record write, the formulas reading a changed
//! cell of that record; after a schema op, every record of the formulas whose text or inputs
//! changed. Both run inside `GridState::apply`, so a write and its formula values are one step
//! and a replay recomputes the same values.

use std::collections::HashMap;
use std::sync::Arc;

use super::{
    evaluate, stored_as_value, stored_value, Compiled, FormulaError, FormulaPlan, Inputs, Value,
};
use crate::grid::codec::format_datetime;
use crate::grid::ops::GridState;
use crate::grid::records::MAX_CELL_TEXT_BYTES;
use crate::grid::store::{CellRef, ColumnStore, RowId};

/// The cells of one record, read as formula values.
struct RecordInputs<'a> {
    store: &'a ColumnStore,
    row: RowId,
    formula: &'a Compiled,
}

impl Inputs for RecordInputs<'_> {
    fn input(&self, index: usize) -> Value {
        let Some(input) = self.formula.inputs.get(index) else { return Value::Empty };
        let Some(slot) = input.slot else {
            return Value::Error(FormulaError::Ref);
        };
        match self.store.value_ref(self.row, slot) {
            CellRef::Empty => Value::Empty,
            CellRef::Text(text) => match input.formula_kind {
                Some(kind) => stored_as_value(text, kind),
                None if text.is_empty() => Value::Empty,
                None if text.len() > MAX_CELL_TEXT_BYTES => Value::Error(FormulaError::Value),
                None => Value::Text(text.to_owned()),
            },
            CellRef::Number(n) => Value::Number(n),
            CellRef::Boolean(b) => Value::Boolean(b),
            CellRef::Datetime(ms) => Value::Text(format_datetime(ms)),
            CellRef::List(items) if items.is_empty() => Value::Empty,
            CellRef::List(items) => {
                let items: Vec<&str> = items.collect();
                let len = items.iter().map(|i| i.len() + 2).sum::<usize>() - 2;
                if len > MAX_CELL_TEXT_BYTES {
                    return Value::Error(FormulaError::Value);
                }
                Value::Text(items.join(", "))
            }
        }
    }
}

impl GridState {
    /// Recompiles the formula columns after a schema op and recomputes, on every record, the
    /// formulas whose text or inputs changed and the formulas reading those.
    pub(crate) fn refresh_formulas(&mut self) {
        let plan = FormulaPlan::build(&self.schema, &self.slots);
        if plan.is_empty() && self.formulas.is_empty() {
            return;
        }
        let before: HashMap<&str, &str> = self
            .formulas
            .formulas
            .iter()
            .map(|f| (f.column_id.as_str(), f.signature.as_str()))
            .collect();
        let mut stale: Vec<String> = Vec::new();
        for formula in &plan.formulas {
            let changed = before.get(formula.column_id.as_str()) != Some(&&*formula.signature);
            let reads_stale = formula.inputs.iter().any(|i| stale.contains(&i.column_id));
            if changed || reads_stale {
                stale.push(formula.column_id.clone());
            }
        }
        self.formulas = Arc::new(plan);
        if stale.is_empty() {
            return;
        }
        let rows: Vec<RowId> = self.store.live_rows().collect();
        let plan = Arc::clone(&self.formulas);
        for formula in plan.formulas.iter().filter(|f| stale.contains(&f.column_id)) {
            for &row in &rows {
                self.store_result(row, formula);
            }
        }
    }

    /// Recompiles the formula columns without recomputing (a state loaded with its values).
    pub(crate) fn compile_formulas(&mut self) {
        self.formulas = Arc::new(FormulaPlan::build(&self.schema, &self.slots));
    }

    /// Recomputes a record's formulas: all of them (`changed: None`, a new record), or those
    /// reading a changed column, directly or through another formula.
    pub(crate) fn compute_formulas(&mut self, row: RowId, changed: Option<&[&str]>) {
        if self.formulas.is_empty() {
            return;
        }
        let plan = Arc::clone(&self.formulas);
        let mut dirty: Vec<&str> = changed.map(<[&str]>::to_vec).unwrap_or_default();
        for formula in &plan.formulas {
            let affected = changed.is_none()
                || formula.inputs.iter().any(|i| dirty.contains(&i.column_id.as_str()));
            if affected && self.store_result(row, formula) {
                dirty.push(&formula.column_id);
            }
        }
    }

    /// Evaluates one formula for one record and stores it; true when the value changed.
    fn store_result(&mut self, row: RowId, formula: &Compiled) -> bool {
        let inputs = RecordInputs { store: &self.store, row, formula };
        let value = stored_value(&evaluate(formula, &inputs));
        // A formula column is stored as text and results are text or empty.
        self.store.set_value(row, formula.slot, &value).unwrap_or(false)
    }
}
