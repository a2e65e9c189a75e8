//! Evaluating a checked formula for one record: values, coercions and the functions, with
//! spreadsheet conventions. Pure: the record's cells come through a closure.

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
            Value::Empty => Ok(String::new()),
            Value::Number(n) => Ok(format_number(*n)),
            Value::Boolean(b) => Ok(b.to_string()),
            Value::Text(t) => Ok(t.clone()),
            Value::Error(e) => Err(*e),
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

/// How a record's cells are read: the value of input `i` of the formula.
pub trait Inputs {
    fn input(&self, index: usize) -> Value;
}

/// Evaluates a checked formula; an error is a value, never a failure.
pub fn evaluate(formula: &Compiled, inputs: &dyn Inputs) -> Value {
    match eval(&formula.expr, inputs) {
        Ok(v) => v,
        Err(e) => Value::Error(e),
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

fn eval(node: &Node, inputs: &dyn Inputs) -> Result<Value> {
    match node {
        Node::Number(n) => Ok(Value::Number(*n)),
        Node::Text(t) => Ok(Value::Text(t.clone())),
        Node::Boolean(b) => Ok(Value::Boolean(*b)),
        Node::Input(i) => inputs.input(*i).check(),
        Node::MissingColumn => Err(FormulaError::Ref),
        Node::UnknownFunction => Err(FormulaError::Name),
        Node::Negate(inner) => finite(-eval(inner, inputs)?.number()?),
        Node::Binary(op, left, right) => binary(*op, eval(left, inputs)?, eval(right, inputs)?),
        Node::Call(function, args) => call(*function, args, inputs),
    }
}

fn binary(op: BinaryOp, left: Value, right: Value) -> Result<Value> {
    let arithmetic = |f: fn(f64, f64) -> f64| finite(f(left.number()?, right.number()?));
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
        BinaryOp::Concat => Ok(Value::Text(left.text()? + &right.text()?)),
        BinaryOp::Eq => Ok(Value::Boolean(compare(&left, &right)? == Ordering::Equal)),
        BinaryOp::Ne => Ok(Value::Boolean(compare(&left, &right)? != Ordering::Equal)),
        BinaryOp::Lt => Ok(Value::Boolean(compare(&left, &right)? == Ordering::Less)),
        BinaryOp::Le => Ok(Value::Boolean(compare(&left, &right)? != Ordering::Greater)),
        BinaryOp::Gt => Ok(Value::Boolean(compare(&left, &right)? == Ordering::Greater)),
        BinaryOp::Ge => Ok(Value::Boolean(compare(&left, &right)? != Ordering::Less)),
    }
}

/// Numbers and booleans compare as numbers (an empty side counts as 0 against them); anything
/// else compares as text, case-insensitively.
fn compare(left: &Value, right: &Value) -> Result<Ordering> {
    let numeric = |v: &Value| matches!(v, Value::Number(_) | Value::Boolean(_));
    let emptyish = |v: &Value| matches!(v, Value::Empty);
    if (numeric(left) || emptyish(left)) && (numeric(right) || emptyish(right)) {
        let (a, b) = (left.number()?, right.number()?);
        return Ok(a.partial_cmp(&b).unwrap_or(Ordering::Equal));
    }
    let (a, b) = (left.text()?.to_lowercase(), right.text()?.to_lowercase());
    Ok(a.cmp(&b))
}

/// A whole, non-negative count argument (a fraction is truncated).
fn count(value: Value) -> Result<usize> {
    let n = value.number()?.trunc();
    if n < 0.0 {
        return Err(FormulaError::Value);
    }
    Ok(if n > usize::MAX as f64 { usize::MAX } else { n as usize })
}

fn call(function: Function, args: &[Node], inputs: &dyn Inputs) -> Result<Value> {
    let arg = |i: usize| -> Result<Value> {
        match args.get(i) {
            Some(node) => eval(node, inputs),
            None => Ok(Value::Empty),
        }
    };
    let all = || args.iter().map(|a| eval(a, inputs)).collect::<Result<Vec<Value>>>();
    let text = |i: usize| arg(i)?.text();
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
        Function::And => {
            let values = all()?;
            let mut result = true;
            for v in values {
                result &= v.boolean()?;
            }
            Ok(Value::Boolean(result))
        }
        Function::Or => {
            let values = all()?;
            let mut result = false;
            for v in values {
                result |= v.boolean()?;
            }
            Ok(Value::Boolean(result))
        }
        Function::Not => Ok(Value::Boolean(!arg(0)?.boolean()?)),
        Function::Concat => {
            let mut out = String::new();
            for v in all()? {
                out.push_str(&v.text()?);
            }
            Ok(Value::Text(out))
        }
        Function::Len => Ok(Value::Number(text(0)?.chars().count() as f64)),
        Function::Lower => Ok(Value::Text(text(0)?.to_lowercase())),
        Function::Upper => Ok(Value::Text(text(0)?.to_uppercase())),
        Function::Trim => {
            let t = text(0)?;
            Ok(Value::Text(t.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")))
        }
        Function::Left | Function::Right => {
            let t = text(0)?;
            let n = if args.len() > 1 { count(arg(1)?)? } else { 1 };
            let chars: Vec<char> = t.chars().collect();
            let n = n.min(chars.len());
            let part = match function {
                Function::Left => &chars[..n],
                _ => &chars[chars.len() - n..],
            };
            Ok(Value::Text(part.iter().collect()))
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
            substitute(text(0)?, text(1)?, text(2)?, args.len() > 3, || arg(3)?.number())
        }
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
        Function::Min | Function::Max | Function::Sum => {
            let mut numbers = Vec::with_capacity(args.len());
            for v in all()? {
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
    }
}

fn substitute(
    text: String,
    old: String,
    new: String,
    has_instance: bool,
    instance: impl FnOnce() -> Result<f64>,
) -> Result<Value> {
    if old.is_empty() {
        return Ok(Value::Text(text));
    }
    if !has_instance {
        return Ok(Value::Text(text.replace(&old, &new)));
    }
    let n = instance()?.trunc();
    if n < 1.0 {
        return Err(FormulaError::Value);
    }
    match text.match_indices(&old).nth(n as usize - 1) {
        Some((at, _)) => {
            Ok(Value::Text(format!("{}{}{}", &text[..at], new, &text[at + old.len()..])))
        }
        None => Ok(Value::Text(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_like_a_spreadsheet() {
        assert_eq!(format_number(3.0), "3");
        assert_eq!(format_number(-2.5), "-2.5");
        assert_eq!(format_number(0.1 + 0.2), "0.3");
        assert_eq!(format_number(1.0 / 3.0), "0.333333333333333");
        assert_eq!(format_number(1e20), "100000000000000000000");
        assert_eq!(parse_number(" 2.5 "), Some(2.5));
        assert_eq!(parse_number("inf"), None);
        assert_eq!(parse_number("NaN"), None);
        assert_eq!(parse_number("-.5"), Some(-0.5));
        assert_eq!(parse_number("abc"), None);
    }

    #[test]
    fn comparisons_mix_numbers_and_text() {
        let t = |s: &str| Value::Text(s.into());
        assert_eq!(compare(&t("a"), &t("A")), Ok(Ordering::Equal));
        assert_eq!(compare(&Value::Number(3.0), &t("3")), Ok(Ordering::Equal));
        assert_eq!(compare(&t("10"), &t("9")), Ok(Ordering::Less));
        assert_eq!(compare(&Value::Number(10.0), &Value::Number(9.0)), Ok(Ordering::Greater));
        assert_eq!(compare(&Value::Empty, &Value::Number(0.0)), Ok(Ordering::Equal));
        assert_eq!(compare(&Value::Empty, &t("")), Ok(Ordering::Equal));
    }

    #[test]
    fn substitute_replaces_every_or_one_instance() {
        let s = |t: &str, o: &str, n: &str| {
            substitute(t.into(), o.into(), n.into(), false, || Ok(0.0)).expect("no error")
        };
        assert_eq!(s("a-b-c", "-", "+"), Value::Text("a+b+c".into()));
        let second = substitute("a-b-c".into(), "-".into(), "+".into(), true, || Ok(2.0));
        assert_eq!(second, Ok(Value::Text("a-b+c".into())));
        let zero = substitute("a".into(), "a".into(), "b".into(), true, || Ok(0.0));
        assert_eq!(zero, Err(FormulaError::Value));
    }
}
