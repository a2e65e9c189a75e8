//! Evaluating a checked formula for one record: values, coercions and the functions, with
//! spreadsheet conventions. Pure: the record's cells come through a closure.

use std::cell::Cell;
use std::cmp::Ordering;

use super::parse::BinaryOp;
use super::Compiled;

/// An evaluation error, shown in the cell as its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormulaError {
    /// `#VALUE!`: a value of the wrong type.
    Value,
    /// `#DIV/0!`: division by zero.
    DivZero,
    /// `#REF!`: a column the formula names is gone.
    Ref,
    /// `#NAME?`: an unknown function.
    Name,
}

impl FormulaError {
    pub fn code(self) -> &'static str {
        match self {
            FormulaError::Value => "#VALUE!",
            FormulaError::DivZero => "#DIV/0!",
            FormulaError::Ref => "#REF!",
            FormulaError::Name => "#NAME?",
        }
    }

    pub fn parse(text: &str) -> Option<FormulaError> {
        [FormulaError::Value, FormulaError::DivZero, FormulaError::Ref, FormulaError::Name]
            .into_iter()
            .find(|e| e.code() == text)
    }
}

/// A value during evaluation.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Empty,
    Number(f64),
    Text(String),
    Boolean(bool),
    Error(FormulaError),
}

type Result<T> = std::result::Result<T, FormulaError>;

/// Parses text as a number the way a spreadsheet does: decimal notation only (no `inf`, `nan`).
pub fn parse_number(text: &str) -> Option<f64> {
    let t = text.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    t.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A number as text: integers without a fraction, others rounded to 15 significant digits in
/// their shortest form (`0.1 + 0.2` is `0.3`).
pub fn format_number(n: f64) -> String {
    if n == 0.0 {
        return "0".to_owned();
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    let rounded: f64 = format!("{n:.14e}").parse().unwrap_or(n);
    format!("{rounded}")
}

/// `n` rounded to 15 significant digits, to undo binary representation noise before rounding.
fn significant(n: f64) -> f64 {
    format!("{n:.14e}").parse().unwrap_or(n)
}

impl Value {
    fn number(&self) -> Result<f64> {
        match self {
            Value::Empty => Ok(0.0),
            Value::Number(n) => Ok(*n),
            Value::Boolean(b) => Ok(f64::from(u8::from(*b))),
            Value::Text(t) => parse_number(t).ok_or(FormulaError::Value),
            Value::Error(e) => Err(*e),
        }
    }

    pub fn text(&self) -> Result<String> {
        match self {
            Value::Text(t) => Ok(t.clone()),
            other => other.clone().into_text(),
        }
    }

    /// The value as text, without copying a text.
    pub fn into_text(self) -> Result<String> {
        match self {
            Value::Empty => Ok(String::new()),
            Value::Number(n) => Ok(format_number(n)),
            Value::Boolean(b) => Ok(b.to_string()),
            Value::Text(t) => Ok(t),
            Value::Error(e) => Err(e),
        }
    }

    fn boolean(&self) -> Result<bool> {
        match self {
            Value::Empty => Ok(false),
            Value::Number(n) => Ok(*n != 0.0),
            Value::Boolean(b) => Ok(*b),
            Value::Text(t) if t.eq_ignore_ascii_case("true") => Ok(true),
            Value::Text(t) if t.eq_ignore_ascii_case("false") => Ok(false),
            Value::Text(_) => Err(FormulaError::Value),
            Value::Error(e) => Err(*e),
        }
    }

    fn check(self) -> Result<Value> {
        match self {
            Value::Error(e) => Err(e),
            v => Ok(v),
        }
    }
}

fn finite(n: f64) -> Result<Value> {
    if n.is_finite() {
        Ok(Value::Number(n))
    } else {
        Err(FormulaError::Value)
    }
}

/// The most bytes of UTF-8 one text value a formula builds may have (1 MiB): a result that
/// would be longer is `#VALUE!`, decided from the lengths before anything is built.
pub const MAX_TEXT_BYTES: usize = 1 << 20;

/// The most bytes of text one evaluation (one formula for one record) may read and build in
/// all (16 MiB): past it the result is `#VALUE!`. Every node is evaluated at most once and the
/// formula's length is capped, so this bounds the time and memory of every evaluation.
pub const MAX_WORK_BYTES: usize = 16 << 20;

/// How a record's cells are read: the value of input `i` of the formula. A text input longer
/// than a cell may hold (a long list joined) should come as `#VALUE!` without being built.
pub trait Inputs {
    fn input(&self, index: usize) -> Value;
}

/// Evaluates a checked formula; an error is a value, never a failure.
pub fn evaluate(formula: &Compiled, inputs: &dyn Inputs) -> Value {
    let run = Eval { inputs, spent: Cell::new(0) };
    match run.node(&formula.expr) {
        Ok(v) => v,
        Err(e) => Value::Error(e),
    }
}

/// One evaluation: the record's inputs and the bytes of text read and built so far.
struct Eval<'a> {
    inputs: &'a dyn Inputs,
    spent: Cell<usize>,
}

impl Eval<'_> {
    /// Counts `len` bytes of text work; `#VALUE!` once the evaluation's budget is spent.
    fn spend(&self, len: usize) -> Result<()> {
        let spent = self.spent.get().saturating_add(len);
        self.spent.set(spent);
        if spent > MAX_WORK_BYTES {
            return Err(FormulaError::Value);
        }
        Ok(())
    }

    /// Admits a text of `len` bytes about to be built: `#VALUE!` when it would be longer than
    /// `MAX_TEXT_BYTES` or pass the budget.
    fn build(&self, len: usize) -> Result<()> {
        if len > MAX_TEXT_BYTES {
            return Err(FormulaError::Value);
        }
        self.spend(len)
    }
}

/// The checked form of `parse::Expr`: columns resolved to input indexes.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Number(f64),
    Text(String),
    Boolean(bool),
    Input(usize),
    /// A column that does not exist (any more).
    MissingColumn,
    Negate(Box<Node>),
    Binary(BinaryOp, Box<Node>, Box<Node>),
    Call(Function, Vec<Node>),
    UnknownFunction,
}

macro_rules! functions {
    ($($variant:ident => $name:literal, $min:literal, $max:expr;)*) => {
        /// The functions formulas can call.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Function { $($variant,)* }

        impl Function {
            pub fn parse(name: &str) -> Option<Function> {
                match name { $($name => Some(Function::$variant),)* _ => None }
            }

            pub fn name(self) -> &'static str {
                match self { $(Function::$variant => $name,)* }
            }

            /// The least and the most arguments (`None`: any number).
            pub fn arity(self) -> (usize, Option<usize>) {
                match self { $(Function::$variant => ($min, $max),)* }
            }
        }
    };
}

functions! {
    If => "IF", 2, Some(3);
    And => "AND", 1, None;
    Or => "OR", 1, None;
    Not => "NOT", 1, Some(1);
    Concat => "CONCAT", 0, None;
    Len => "LEN", 1, Some(1);
    Lower => "LOWER", 1, Some(1);
    Upper => "UPPER", 1, Some(1);
    Trim => "TRIM", 1, Some(1);
    Left => "LEFT", 1, Some(2);
    Right => "RIGHT", 1, Some(2);
    Mid => "MID", 3, Some(3);
    Substitute => "SUBSTITUTE", 3, Some(4);
    Round => "ROUND", 1, Some(2);
    Abs => "ABS", 1, Some(1);
    Min => "MIN", 0, None;
    Max => "MAX", 0, None;
    Sum => "SUM", 0, None;
}

impl Eval<'_> {
    fn node(&self, node: &Node) -> Result<Value> {
        match node {
            Node::Number(n) => Ok(Value::Number(*n)),
            Node::Text(t) => {
                self.build(t.len())?;
                Ok(Value::Text(t.clone()))
            }
            Node::Boolean(b) => Ok(Value::Boolean(*b)),
            Node::Input(i) => {
                let value = self.inputs.input(*i).check()?;
                if let Value::Text(t) = &value {
                    // Read, not built: a cell may be longer than a built text.
                    self.spend(t.len())?;
                }
                Ok(value)
            }
            Node::MissingColumn => Err(FormulaError::Ref),
            Node::UnknownFunction => Err(FormulaError::Name),
            Node::Negate(inner) => finite(-self.node(inner)?.number()?),
            Node::Binary(op, left, right) => self.binary(*op, self.node(left)?, self.node(right)?),
            Node::Call(function, args) => self.call(*function, args),
        }
    }

    fn binary(&self, op: BinaryOp, left: Value, right: Value) -> Result<Value> {
        let arithmetic = |f: fn(f64, f64) -> f64| finite(f(left.number()?, right.number()?));
        let compare = || self.compare(&left, &right);
        match op {
            BinaryOp::Add => arithmetic(|a, b| a + b),
            BinaryOp::Sub => arithmetic(|a, b| a - b),
            BinaryOp::Mul => arithmetic(|a, b| a * b),
            BinaryOp::Div => {
                let (a, b) = (left.number()?, right.number()?);
                if b == 0.0 {
                    return Err(FormulaError::DivZero);
                }
                finite(a / b)
            }
            BinaryOp::Pow => {
                let (a, b) = (left.number()?, right.number()?);
                if a == 0.0 && b < 0.0 {
                    return Err(FormulaError::DivZero);
                }
                finite(a.powf(b))
            }
            BinaryOp::Concat => {
                let (a, b) = (left.into_text()?, right.into_text()?);
                self.build(a.len().saturating_add(b.len()))?;
                Ok(Value::Text(a + &b))
            }
            BinaryOp::Eq => Ok(Value::Boolean(compare()? == Ordering::Equal)),
            BinaryOp::Ne => Ok(Value::Boolean(compare()? != Ordering::Equal)),
            BinaryOp::Lt => Ok(Value::Boolean(compare()? == Ordering::Less)),
            BinaryOp::Le => Ok(Value::Boolean(compare()? != Ordering::Greater)),
            BinaryOp::Gt => Ok(Value::Boolean(compare()? == Ordering::Greater)),
            BinaryOp::Ge => Ok(Value::Boolean(compare()? != Ordering::Less)),
        }
    }

    /// Numbers and booleans compare as numbers (an empty side counts as 0 against them);
    /// anything else compares as text, case-insensitively.
    fn compare(&self, left: &Value, right: &Value) -> Result<Ordering> {
        let numeric = |v: &Value| matches!(v, Value::Number(_) | Value::Boolean(_));
        let emptyish = |v: &Value| matches!(v, Value::Empty);
        if (numeric(left) || emptyish(left)) && (numeric(right) || emptyish(right)) {
            let (a, b) = (left.number()?, right.number()?);
            return Ok(a.partial_cmp(&b).unwrap_or(Ordering::Equal));
        }
        let (a, b) = (left.text()?, right.text()?);
        self.spend(lowered_len(&a).saturating_add(lowered_len(&b)))?;
        Ok(a.to_lowercase().cmp(&b.to_lowercase()))
    }

    fn call(&self, function: Function, args: &[Node]) -> Result<Value> {
        let arg = |i: usize| -> Result<Value> {
            match args.get(i) {
                Some(node) => self.node(node),
                None => Ok(Value::Empty),
            }
        };
        let all = || args.iter().map(|a| self.node(a)).collect::<Result<Vec<Value>>>();
        match function {
            Function::If => {
                if arg(0)?.boolean()? {
                    arg(1)
                } else if args.len() > 2 {
                    arg(2)
                } else {
                    Ok(Value::Boolean(false))
                }
            }
            Function::And | Function::Or => {
                let mut result = function == Function::And;
                for v in all()? {
                    match function {
                        Function::And => result &= v.boolean()?,
                        _ => result |= v.boolean()?,
                    }
                }
                Ok(Value::Boolean(result))
            }
            Function::Not => Ok(Value::Boolean(!arg(0)?.boolean()?)),
            Function::Round => {
                let x = arg(0)?.number()?;
                let digits = if args.len() > 1 { arg(1)?.number()?.trunc() } else { 0.0 };
                if digits.abs() > 15.0 {
                    return finite(x);
                }
                let scale = 10f64.powi(digits as i32);
                finite(significant(x * scale).round() / scale)
            }
            Function::Abs => finite(arg(0)?.number()?.abs()),
            Function::Min | Function::Max | Function::Sum => aggregate(function, all()?),
            Function::Concat
            | Function::Len
            | Function::Lower
            | Function::Upper
            | Function::Trim
            | Function::Left
            | Function::Right
            | Function::Mid
            | Function::Substitute => self.text_call(function, args, &arg),
        }
    }

    /// The text functions; every result's length is known before it is built.
    fn text_call(
        &self,
        function: Function,
        args: &[Node],
        arg: &dyn Fn(usize) -> Result<Value>,
    ) -> Result<Value> {
        let text = |i: usize| arg(i)?.into_text();
        match function {
            Function::Concat => {
                let mut parts = Vec::with_capacity(args.len());
                for node in args {
                    parts.push(self.node(node)?.into_text()?);
                }
                self.build(parts.iter().map(String::len).fold(0, usize::saturating_add))?;
                Ok(Value::Text(parts.concat()))
            }
            Function::Len => Ok(Value::Number(text(0)?.chars().count() as f64)),
            Function::Lower => {
                let t = text(0)?;
                self.build(lowered_len(&t))?;
                Ok(Value::Text(t.to_lowercase()))
            }
            Function::Upper => {
                let t = text(0)?;
                self.build(
                    t.chars().map(|c| c.to_uppercase().map(char::len_utf8).sum::<usize>()).sum(),
                )?;
                Ok(Value::Text(t.to_uppercase()))
            }
            Function::Trim => {
                let t = text(0)?;
                Ok(Value::Text(
                    t.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" "),
                ))
            }
            Function::Left | Function::Right => {
                let t = text(0)?;
                let n = if args.len() > 1 { count(arg(1)?)? } else { 1 };
                Ok(Value::Text(if function == Function::Left { left(&t, n) } else { right(&t, n) }))
            }
            Function::Mid => {
                let t = text(0)?;
                let start = arg(1)?.number()?.trunc();
                let n = count(arg(2)?)?;
                if start < 1.0 {
                    return Err(FormulaError::Value);
                }
                let skip = if start > usize::MAX as f64 { usize::MAX } else { start as usize - 1 };
                Ok(Value::Text(t.chars().skip(skip).take(n).collect()))
            }
            Function::Substitute => {
                let (t, old, new) = (text(0)?, text(1)?, text(2)?);
                let instance = || arg(3)?.number();
                substitute(t, old, new, args.len() > 3, instance, &|len| self.build(len))
            }
            _ => Err(FormulaError::Name),
        }
    }
}

/// The length in bytes of `text.to_lowercase()`, without building it.
fn lowered_len(text: &str) -> usize {
    text.chars().map(|c| c.to_lowercase().map(char::len_utf8).sum::<usize>()).sum()
}

/// The first `n` characters of `text`.
fn left(text: &str, n: usize) -> String {
    let end = text.char_indices().nth(n).map_or(text.len(), |(at, _)| at);
    text[..end].to_owned()
}

/// The last `n` characters of `text`.
fn right(text: &str, n: usize) -> String {
    let skip = text.chars().count().saturating_sub(n);
    let start = text.char_indices().nth(skip).map_or(text.len(), |(at, _)| at);
    text[start..].to_owned()
}

/// MIN, MAX or SUM of the non-empty values.
fn aggregate(function: Function, values: Vec<Value>) -> Result<Value> {
    let mut numbers = Vec::with_capacity(values.len());
    for v in values {
        if v != Value::Empty {
            numbers.push(v.number()?);
        }
    }
    let result = match function {
        Function::Min => numbers.iter().copied().reduce(f64::min).unwrap_or(0.0),
        Function::Max => numbers.iter().copied().reduce(f64::max).unwrap_or(0.0),
        _ => numbers.iter().sum(),
    };
    finite(result)
}

/// A whole, non-negative count argument (a fraction is truncated).
fn count(value: Value) -> Result<usize> {
    let n = value.number()?.trunc();
    if n < 0.0 {
        return Err(FormulaError::Value);
    }
    Ok(if n > usize::MAX as f64 { usize::MAX } else { n as usize })
}

/// SUBSTITUTE: every instance of `old` in `text`, or only the `instance`th, replaced by `new`.
/// The result's length is computed from the number of matches and passed to `admit` first.
fn substitute(
    text: String,
    old: String,
    new: String,
    has_instance: bool,
    instance: impl FnOnce() -> Result<f64>,
    admit: &dyn Fn(usize) -> Result<()>,
) -> Result<Value> {
    if old.is_empty() {
        return Ok(Value::Text(text));
    }
    if !has_instance {
        let matches = text.matches(old.as_str()).count();
        // The matches do not overlap, so they fit in the text.
        let kept = text.len() - matches * old.len();
        admit(kept.saturating_add(matches.saturating_mul(new.len())))?;
        return Ok(Value::Text(text.replace(&old, &new)));
    }
    let n = instance()?.trunc();
    if n < 1.0 {
        return Err(FormulaError::Value);
    }
    let nth = if n > usize::MAX as f64 { usize::MAX } else { n as usize - 1 };
    match text.match_indices(&old).nth(nth) {
        Some((at, _)) => {
            admit((text.len() - old.len()).saturating_add(new.len()))?;
            Ok(Value::Text(format!("{}{}{}", &text[..at], new, &text[at + old.len()..])))
        }
        None => Ok(Value::Text(text)),
    }
}

#[cfg(test)]
#[path = "eval_tests.rs"]
mod tests;
