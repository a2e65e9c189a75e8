//! Unit tests of the evaluator: number formatting, comparisons, SUBSTITUTE, and the bounds on
//! built texts and on the work of one evaluation.

use super::*;

struct NoInputs;

impl Inputs for NoInputs {
    fn input(&self, _: usize) -> Value {
        Value::Empty
    }
}

fn run(node: &Node) -> Value {
    let run = Eval { inputs: &NoInputs, spent: Cell::new(0) };
    run.node(node).unwrap_or_else(Value::Error)
}

fn compare(left: &Value, right: &Value) -> Result<Ordering> {
    Eval { inputs: &NoInputs, spent: Cell::new(0) }.compare(left, right)
}

fn text(t: &str) -> Node {
    Node::Text(t.into())
}

/// SUBSTITUTE(inner, "a", ten "a"s): each level makes the text ten times longer.
fn grow(inner: Node) -> Node {
    Node::Call(Function::Substitute, vec![inner, text("a"), text(&"a".repeat(10))])
}

#[test]
fn growing_text_stops_at_the_limit_before_it_is_built() {
    let mut node = text(&"a".repeat(1000));
    for _ in 0..3 {
        node = grow(node);
    }
    // 1,000,000 bytes: under 1 MiB.
    assert_eq!(run(&node), Value::Text("a".repeat(1_000_000)));
    let mut node = grow(node);
    assert_eq!(run(&node), Value::Error(FormulaError::Value));
    for _ in 0..60 {
        node = grow(node);
    }
    assert_eq!(run(&node), Value::Error(FormulaError::Value));
    let big = text(&"b".repeat(1000));
    let concat = |a: Node, b: Node| Node::Binary(BinaryOp::Concat, Box::new(a), Box::new(b));
    let mut doubled = big.clone();
    for _ in 0..12 {
        doubled = concat(doubled.clone(), doubled);
    }
    assert_eq!(run(&doubled), Value::Error(FormulaError::Value));
    // 'ŉ' (2 bytes) upper-cases to "ʼN" (3 bytes): 800,000 bytes become 1,200,000.
    let upper = Node::Call(Function::Upper, vec![text(&"ŉ".repeat(400_000))]);
    assert_eq!(run(&upper), Value::Error(FormulaError::Value));
    let upper = Node::Call(Function::Upper, vec![text(&"ŉ".repeat(300_000))]);
    assert_eq!(run(&upper), Value::Text("ʼN".repeat(300_000)));
    let call = Node::Call(Function::Concat, vec![big.clone(); 1100]);
    assert_eq!(run(&call), Value::Error(FormulaError::Value));
    let call = Node::Call(Function::Concat, vec![big; 1000]);
    assert_eq!(run(&call), Value::Text("b".repeat(1_000_000)));
}

#[test]
fn an_evaluation_has_a_work_budget() {
    let mb = text(&"c".repeat(1_000_000));
    let len = Node::Call(Function::Len, vec![mb]);
    let sum = |n: usize| Node::Call(Function::Sum, vec![len.clone(); n]);
    assert_eq!(run(&sum(10)), Value::Number(1e7));
    assert_eq!(run(&sum(17)), Value::Error(FormulaError::Value));
}

#[test]
fn left_right_and_mid_count_characters() {
    let call = |f: Function, args: Vec<Node>| run(&Node::Call(f, args));
    let n = |x: f64| Node::Number(x);
    assert_eq!(call(Function::Left, vec![text("héllo"), n(2.0)]), Value::Text("hé".into()));
    assert_eq!(call(Function::Right, vec![text("héllo"), n(4.0)]), Value::Text("éllo".into()));
    assert_eq!(call(Function::Right, vec![text("hé"), n(9.0)]), Value::Text("hé".into()));
    assert_eq!(call(Function::Left, vec![text("hé"), n(1e300)]), Value::Text("hé".into()));
    assert_eq!(call(Function::Mid, vec![text("héllo"), n(2.0), n(2.0)]), Value::Text("él".into()));
}

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
        substitute(t.into(), o.into(), n.into(), false, || Ok(0.0), &|_| Ok(())).expect("no error")
    };
    assert_eq!(s("a-b-c", "-", "+"), Value::Text("a+b+c".into()));
    let second = substitute("a-b-c".into(), "-".into(), "+".into(), true, || Ok(2.0), &|_| Ok(()));
    assert_eq!(second, Ok(Value::Text("a-b+c".into())));
    let zero = substitute("a".into(), "a".into(), "b".into(), true, || Ok(0.0), &|_| Ok(()));
    assert_eq!(zero, Err(FormulaError::Value));
}
