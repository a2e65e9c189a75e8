//! Formula columns: the expression language, checking a formula against a schema, and the
//! compiled plan a branch keeps to recompute its formula cells (`recompute.rs`).
//!
//! A formula cell is stored as text (its value's text form, or an error code) so that filters
//! and sort treat it like a text column; reads give it back typed (`typed_value`).
//!
//! # Grammar
//!
//! ```text
//! formula    = comparison
//! comparison = concat (("=" | "<>" | "!=" | "<" | "<=" | ">" | ">=") concat)*
//! concat     = additive ("&" additive)*
//! additive   = term (("+" | "-") term)*
//! term       = power (("*" | "/") power)*
//! power      = unary ("^" power)?                right-associative: 2^3^2 = 2^9
//! unary      = ("-" | "+") unary | operand       binds tightest: -2^2 = 4
//! operand    = number | string | "TRUE" | "FALSE" | column | call | "(" formula ")"
//! number     = digits ["." digits] [("e" | "E") ["+" | "-"] digits]   (also ".5")
//! string     = '"' (any character but '"', or '""' for one quote)* '"'
//! column     = "[" column id "]"
//! call       = name "(" [formula ("," formula)*] ")"      name in any case; ";" = ","
//! ```
//!
//! Whitespace separates tokens. Texts are at most 10,000 characters and nest at most 64 deep.
//!
//! # Values
//!
//! A cell reads as its value: text, a number, a boolean, or empty (`""` as text, 0 as a
//! number). Datetimes read as their RFC 3339 text and lists (multiple selections, files,
//! references) as their items joined with `", "`. Text converts to a number when it is one;
//! numbers print in their shortest form rounded to 15 significant digits. `=` and the other
//! comparisons compare numbers and booleans as numbers and anything else as text, ignoring
//! case. Functions: IF, AND, OR, NOT, CONCAT, LEN, LOWER, UPPER, TRIM, LEFT, RIGHT, MID (1-based),
//! SUBSTITUTE, ROUND (half away from zero), ABS, MIN, MAX, SUM. Errors are values: `#VALUE!`
//! (wrong type), `#DIV/0!`, `#REF!` (a column deleted since), `#NAME?` (unknown function).

mod eval;
mod parse;
mod recompute;

use std::collections::{HashMap, HashSet};

pub use eval::{
    evaluate, format_number, parse_number, FormulaError, Function, Inputs, Node, Value,
    MAX_TEXT_BYTES, MAX_WORK_BYTES,
};
pub use parse::{parse, rename_column, Expr, SyntaxError};

use super::schema::{ColumnDef, ColumnType, FormulaSetting, ResultValueType, Schema};
use super::store::ColumnSlot;
use super::value::CellValue;

/// What a formula's result is, as far as its text tells before evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    Number,
    Boolean,
    Text,
    /// Depends on the record (an IF with branches of different kinds).
    Any,
}

/// A column a formula reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub column_id: String,
    /// `None` when the column is gone: the formula gives `#REF!`.
    pub slot: Option<ColumnSlot>,
    /// For a formula column: how its stored text reads back.
    pub formula_kind: Option<ResultKind>,
}

/// One formula column, checked and resolved against its branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Compiled {
    pub column_id: String,
    pub slot: ColumnSlot,
    pub expr: Node,
    pub inputs: Vec<Input>,
    pub kind: ResultKind,
    pub setting: FormulaSetting,
    /// Changes whenever the values could: the text, or where or what an input is.
    signature: String,
}

/// A branch's formula columns, each after the formula columns it reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FormulaPlan {
    pub formulas: Vec<Compiled>,
}

/// Why a formula was refused; each message is a sentence for a 400.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FormulaRefused {
    #[error("The formula does not parse: {0}.")]
    Syntax(SyntaxError),
    #[error("The formula of column \"{0}\" refers to itself.")]
    RefersToItself(String),
    #[error("The formula of column \"{column}\" refers to itself through column \"{via}\".")]
    Cycle { column: String, via: String },
    #[error("The formula refers to column \"{0}\", which does not exist.")]
    UnknownColumn(String),
    /// A function called with `given` arguments where it takes `expected` ("2", "1 to 3", "at
    /// least 1").
    #[error("{function} takes {expected} arguments, not {given}.")]
    Arity { function: &'static str, expected: String, given: usize },
}

/// Checks a formula for column `column_id` of `schema` (the column may be new): it parses, it
/// names only existing columns, not itself even through other formulas, and calls known
/// functions with a valid number of arguments.
pub fn check(schema: &Schema, column_id: &str, text: &str) -> Result<(), FormulaRefused> {
    let expr = parse(text).map_err(FormulaRefused::Syntax)?;
    let mut problem = None;
    walk(&expr, &mut |e| {
        if problem.is_some() {
            return;
        }
        problem = match e {
            Expr::Column(id) if id == column_id => Some(FormulaRefused::RefersToItself(id.clone())),
            Expr::Column(id) if schema.column(id).is_none() => {
                Some(FormulaRefused::UnknownColumn(id.clone()))
            }
            Expr::Call(name, args) => {
                Function::parse(name).and_then(|f| arity_error(f, args.len()))
            }
            _ => None,
        };
    });
    if let Some(problem) = problem {
        return Err(problem);
    }
    if let Some(via) = cycle_through(schema, column_id, &expr) {
        return Err(FormulaRefused::Cycle { column: column_id.to_owned(), via: via.to_owned() });
    }
    Ok(())
}

/// The refusal of a call of `function` with `given` arguments, if it takes another number.
fn arity_error(function: Function, given: usize) -> Option<FormulaRefused> {
    let (min, max) = function.arity();
    if given >= min && max.is_none_or(|m| given <= m) {
        return None;
    }
    let expected = match max {
        Some(m) if m == min => format!("{min}"),
        Some(m) => format!("{min} to {m}"),
        None => format!("at least {min}"),
    };
    Some(FormulaRefused::Arity { function: function.name(), expected, given })
}

/// Calls `f` on every node of `expr`.
fn walk(expr: &Expr, f: &mut impl FnMut(&Expr)) {
    f(expr);
    match expr {
        Expr::Negate(inner) => walk(inner, f),
        Expr::Binary(_, left, right) => {
            walk(left, f);
            walk(right, f);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| walk(a, f)),
        Expr::Number(_) | Expr::Text(_) | Expr::Boolean(_) | Expr::Column(_) => {}
    }
}

/// The column ids a formula names, each once, in order of appearance.
pub fn columns_of(expr: &Expr) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    walk(expr, &mut |e| {
        if let Expr::Column(id) = e {
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
    });
    ids
}

/// The formula columns of `schema` with their parsed text (texts that do not parse are left
/// out: they were refused when written).
fn parsed_formulas(schema: &Schema) -> HashMap<&str, Expr> {
    schema
        .columns
        .iter()
        .filter(|c| c.column_type == ColumnType::Formula)
        .filter_map(|c| Some((c.id.as_str(), parse(&c.formula.as_ref()?.formula_text).ok()?)))
        .collect()
}

/// The first formula column through which `expr` (the formula of `column_id`) reads
/// `column_id` again, if any.
fn cycle_through(schema: &Schema, column_id: &str, expr: &Expr) -> Option<String> {
    let formulas = parsed_formulas(schema);
    for start in columns_of(expr) {
        let mut stack = vec![start.clone()];
        let mut seen = HashSet::new();
        while let Some(id) = stack.pop() {
            if id == column_id {
                return Some(start);
            }
            if !seen.insert(id.clone()) || id == column_id {
                continue;
            }
            if let Some(e) = formulas.get(id.as_str()) {
                stack.extend(columns_of(e));
            }
        }
    }
    None
}

impl FormulaPlan {
    /// Compiles the formula columns of `schema` that have storage in `slots`.
    pub fn build(schema: &Schema, slots: &foldhash::HashMap<String, ColumnSlot>) -> FormulaPlan {
        let parsed = parsed_formulas(schema);
        let mut kinds: HashMap<String, ResultKind> = HashMap::new();
        let mut formulas = Vec::new();
        for column in dependency_order(schema, &parsed) {
            let (Some(setting), Some(&slot)) = (&column.formula, slots.get(&column.id)) else {
                continue;
            };
            let Some(expr) = parsed.get(column.id.as_str()) else { continue };
            let ids = columns_of(expr);
            let inputs: Vec<Input> = ids
                .iter()
                .map(|id| Input {
                    column_id: id.clone(),
                    slot: schema.column(id).and(slots.get(id).copied()),
                    formula_kind: kinds.get(id).copied(),
                })
                .collect();
            let node = resolve(expr, &ids, &inputs);
            let kind = result_kind(&node, &|i| input_kind(schema, &inputs[i]));
            let signature = format!(
                "{}|{:?}|{}",
                setting.formula_text,
                slot,
                inputs
                    .iter()
                    .map(|i| format!("{}:{:?}:{:?}", i.column_id, i.slot, i.formula_kind))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            kinds.insert(column.id.clone(), kind);
            formulas.push(Compiled {
                column_id: column.id.clone(),
                slot,
                expr: node,
                inputs,
                kind,
                setting: setting.clone(),
                signature,
            });
        }
        FormulaPlan { formulas }
    }

    pub fn is_empty(&self) -> bool {
        self.formulas.is_empty()
    }

    pub fn get(&self, column_id: &str) -> Option<&Compiled> {
        self.formulas.iter().find(|f| f.column_id == column_id)
    }
}

/// Formula columns ordered so that each comes after the formula columns it reads (a cycle,
/// which `check` refuses, is broken anywhere).
fn dependency_order<'a>(schema: &'a Schema, parsed: &HashMap<&str, Expr>) -> Vec<&'a ColumnDef> {
    let mut ordered: Vec<&ColumnDef> = Vec::new();
    let mut placed: HashSet<&str> = HashSet::new();
    let mut visiting: HashSet<&str> = HashSet::new();
    fn visit<'a>(
        column: &'a ColumnDef,
        schema: &'a Schema,
        parsed: &HashMap<&str, Expr>,
        placed: &mut HashSet<&'a str>,
        visiting: &mut HashSet<&'a str>,
        ordered: &mut Vec<&'a ColumnDef>,
    ) {
        if placed.contains(column.id.as_str()) || !visiting.insert(column.id.as_str()) {
            return;
        }
        if let Some(expr) = parsed.get(column.id.as_str()) {
            for id in columns_of(expr) {
                if let Some(input) = schema.column(&id) {
                    if input.column_type == ColumnType::Formula {
                        visit(input, schema, parsed, placed, visiting, ordered);
                    }
                }
            }
        }
        placed.insert(column.id.as_str());
        ordered.push(column);
    }
    for column in schema.columns.iter().filter(|c| c.column_type == ColumnType::Formula) {
        visit(column, schema, parsed, &mut placed, &mut visiting, &mut ordered);
    }
    ordered
}

/// The checked form of `expr`, columns replaced by their index in `ids`.
fn resolve(expr: &Expr, ids: &[String], inputs: &[Input]) -> Node {
    match expr {
        Expr::Number(n) => Node::Number(*n),
        Expr::Text(t) => Node::Text(t.clone()),
        Expr::Boolean(b) => Node::Boolean(*b),
        Expr::Column(id) => match ids.iter().position(|i| i == id) {
            Some(i) if inputs[i].slot.is_some() => Node::Input(i),
            _ => Node::MissingColumn,
        },
        Expr::Negate(inner) => Node::Negate(Box::new(resolve(inner, ids, inputs))),
        Expr::Binary(op, l, r) => {
            Node::Binary(*op, Box::new(resolve(l, ids, inputs)), Box::new(resolve(r, ids, inputs)))
        }
        Expr::Call(name, args) => match Function::parse(name) {
            Some(function) => {
                Node::Call(function, args.iter().map(|a| resolve(a, ids, inputs)).collect())
            }
            None => Node::UnknownFunction,
        },
    }
}

fn input_kind(schema: &Schema, input: &Input) -> ResultKind {
    if let Some(kind) = input.formula_kind {
        return kind;
    }
    match schema.column(&input.column_id).map(|c| c.column_type) {
        Some(ColumnType::Number) => ResultKind::Number,
        Some(ColumnType::Boolean) => ResultKind::Boolean,
        _ => ResultKind::Text,
    }
}

fn result_kind(node: &Node, input: &dyn Fn(usize) -> ResultKind) -> ResultKind {
    use parse::BinaryOp as B;
    match node {
        Node::Number(_) | Node::Negate(_) => ResultKind::Number,
        Node::Text(_) | Node::MissingColumn | Node::UnknownFunction => ResultKind::Text,
        Node::Boolean(_) => ResultKind::Boolean,
        Node::Input(i) => input(*i),
        Node::Binary(op, _, _) => match op {
            B::Add | B::Sub | B::Mul | B::Div | B::Pow => ResultKind::Number,
            B::Concat => ResultKind::Text,
            B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => ResultKind::Boolean,
        },
        Node::Call(function, args) => match function {
            Function::If => {
                let then = args.get(1).map_or(ResultKind::Boolean, |a| result_kind(a, input));
                let otherwise = args.get(2).map_or(ResultKind::Boolean, |a| result_kind(a, input));
                if then == otherwise {
                    then
                } else {
                    ResultKind::Any
                }
            }
            Function::And | Function::Or | Function::Not => ResultKind::Boolean,
            Function::Concat
            | Function::Lower
            | Function::Upper
            | Function::Trim
            | Function::Left
            | Function::Right
            | Function::Mid
            | Function::Substitute => ResultKind::Text,
            Function::Len
            | Function::Round
            | Function::Abs
            | Function::Min
            | Function::Max
            | Function::Sum => ResultKind::Number,
        },
    }
}

/// A result as stored: its text form, or the error code; empty text is an empty cell.
pub fn stored_value(value: &Value) -> CellValue {
    let text = match value {
        Value::Empty => return CellValue::Empty,
        Value::Number(n) => format_number(*n),
        Value::Boolean(b) => b.to_string(),
        Value::Text(t) if t.is_empty() => return CellValue::Empty,
        Value::Text(t) => t.clone(),
        Value::Error(e) => e.code().to_owned(),
    };
    CellValue::Text(text)
}

/// Stored text read back as a value of `kind` (errors come back as errors).
pub fn stored_as_value(text: &str, kind: ResultKind) -> Value {
    if text.is_empty() {
        return Value::Empty;
    }
    if let Some(e) = FormulaError::parse(text) {
        return Value::Error(e);
    }
    let boolean = || match text {
        "true" => Some(Value::Boolean(true)),
        "false" => Some(Value::Boolean(false)),
        _ => None,
    };
    let number = || parse_number(text).map(Value::Number);
    let fallback = || Value::Text(text.to_owned());
    match kind {
        ResultKind::Text => fallback(),
        ResultKind::Number => number().unwrap_or_else(fallback),
        ResultKind::Boolean => boolean().unwrap_or_else(fallback),
        ResultKind::Any => boolean().or_else(number).unwrap_or_else(fallback),
    }
}

/// A stored formula cell as read, typed per the column's settings (decisions.md section 4).
pub fn typed_value(stored: &CellValue, formula: &Compiled) -> CellValue {
    let text = match stored {
        CellValue::Text(t) => t.as_str(),
        _ => "",
    };
    let setting = &formula.setting;
    if setting.always_format_result_value_as_list
        || setting.detect_result_value_type == Some(ResultValueType::List)
    {
        let items = if text.is_empty() { Vec::new() } else { vec![text.to_owned()] };
        return CellValue::List(items);
    }
    let kind = match setting.detect_result_value_type {
        Some(ResultValueType::String | ResultValueType::Datetime) => ResultKind::Text,
        Some(ResultValueType::Decimal) => ResultKind::Number,
        Some(ResultValueType::Boolean) => ResultKind::Boolean,
        Some(ResultValueType::List) | Some(ResultValueType::Na) | None => formula.kind,
    };
    match stored_as_value(text, kind) {
        Value::Empty => CellValue::Empty,
        Value::Number(n) => CellValue::Number(n),
        Value::Boolean(b) => CellValue::Boolean(b),
        Value::Text(t) => CellValue::Text(t),
        Value::Error(e) => CellValue::Text(e.code().to_owned()),
    }
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
