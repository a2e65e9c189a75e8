//! Parsing the `query` and `sort` parameters' JSON into raw conditions and keys, before any
//! column is looked up (that is `filter::bind_*`, in the grid actor). See the module doc of
//! `grid::query` for the grammar.

use serde_json::Value;

use super::error::{QueryError, QueryResult};

/// A filter operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Contains,
    NotContains,
    StartsWith,
    NotStartsWith,
    EndsWith,
    NotEndsWith,
    Regexp,
    NotRegexp,
    In,
    NotIn,
    Between,
    NotBetween,
    IsEmpty,
    IsNotEmpty,
    IsNull,
    IsNotNull,
}

impl Op {
    /// Whether the operator matches text (contains, starts or ends with, regexp, or their
    /// negations): answered by reading a whole column, where the others use an index.
    pub fn matches_text(self) -> bool {
        matches!(
            self,
            Op::Contains
                | Op::NotContains
                | Op::StartsWith
                | Op::NotStartsWith
                | Op::EndsWith
                | Op::NotEndsWith
                | Op::Regexp
                | Op::NotRegexp
        )
    }
}

const OPS: [(&str, Op); 22] = [
    ("=", Op::Eq),
    ("!=", Op::Ne),
    ("<", Op::Lt),
    ("<=", Op::Le),
    (">", Op::Gt),
    (">=", Op::Ge),
    ("contains", Op::Contains),
    ("notContains", Op::NotContains),
    ("startsWith", Op::StartsWith),
    ("notStartsWith", Op::NotStartsWith),
    ("endsWith", Op::EndsWith),
    ("notEndsWith", Op::NotEndsWith),
    ("regexp", Op::Regexp),
    ("notRegexp", Op::NotRegexp),
    ("in", Op::In),
    ("notIn", Op::NotIn),
    ("between", Op::Between),
    ("notBetween", Op::NotBetween),
    ("isEmpty", Op::IsEmpty),
    ("isNotEmpty", Op::IsNotEmpty),
    ("isNull", Op::IsNull),
    ("isNotNull", Op::IsNotNull),
];

impl Op {
    /// The operator named `name` (exact spelling).
    pub fn parse(name: &str) -> Option<Op> {
        OPS.iter().find(|(n, _)| *n == name).map(|(_, op)| *op)
    }

    /// The operator's name as written in a query.
    pub fn name(self) -> &'static str {
        OPS.iter().find(|(_, op)| *op == self).map_or("?", |(n, _)| n)
    }

    /// True for operators that ignore their value.
    pub fn takes_no_value(self) -> bool {
        matches!(self, Op::IsEmpty | Op::IsNotEmpty | Op::IsNull | Op::IsNotNull)
    }
}

/// One `field: {operator: value}` condition as written.
#[derive(Debug, Clone, PartialEq)]
pub struct RawFilter {
    pub field: String,
    pub op: Op,
    pub value: Value,
}

/// One `field: direction` sort key as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSort {
    pub field: String,
    pub descending: bool,
}

/// True when a parameter is absent in effect: empty, `null` or `{}`.
fn is_blank(text: &str) -> bool {
    matches!(text.trim(), "" | "null" | "{}")
}

/// Parses a `query` parameter.
pub fn parse_query(text: &str) -> QueryResult<Vec<RawFilter>> {
    if is_blank(text) {
        return Ok(Vec::new());
    }
    let invalid_field = |why: String| QueryError::InvalidField(why);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        invalid_field(format!("query {text} is not valid JSON ({e}); expected {{\"<columnId>\": {{\"<operator>\": <value>}}}}."))
    })?;
    let Value::Object(conditions) = value else {
        return Err(invalid_field(format!(
            "query {text} must be a JSON object of column ids to {{\"<operator>\": <value>}}."
        )));
    };
    let mut filters = Vec::with_capacity(conditions.len());
    for (field, condition) in conditions {
        if field.trim().is_empty() {
            return Err(invalid_field("query names an empty column id.".to_owned()));
        }
        let bad_operator = |why: String| QueryError::InvalidOperator(why);
        let Value::Object(operators) = condition else {
            return Err(bad_operator(format!(
                "the condition on \"{field}\" must be an object of one operator to a value, \
                 e.g. {{\"=\": \"text\"}}; got {condition}."
            )));
        };
        if operators.len() != 1 {
            return Err(bad_operator(format!(
                "the condition on \"{field}\" must name exactly one operator; it names {}.",
                operators.len()
            )));
        }
        let (name, value) = operators.into_iter().next().expect("the object has exactly one entry");
        let op = Op::parse(&name).ok_or_else(|| {
            bad_operator(format!("\"{name}\" (on \"{field}\") is not a filter operator."))
        })?;
        if !op.takes_no_value() {
            let missing = match &value {
                Value::Null => true,
                Value::Array(items) => items.is_empty(),
                _ => false,
            };
            if missing {
                return Err(QueryError::MissingValue(format!(
                    "operator \"{name}\" on \"{field}\" needs a value."
                )));
            }
        }
        filters.push(RawFilter { field, op, value });
    }
    Ok(filters)
}

/// Parses a `sort` parameter.
pub fn parse_sort(text: &str) -> QueryResult<Vec<RawSort>> {
    if is_blank(text) {
        return Ok(Vec::new());
    }
    let invalid_field = |why: String| QueryError::InvalidSortField(why);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        invalid_field(format!(
            "sort {text} is not valid JSON ({e}); expected {{\"<columnId>\": \"asc\"|\"desc\"}}."
        ))
    })?;
    let Value::Object(keys) = value else {
        return Err(invalid_field(format!(
            "sort {text} must be a JSON object of column ids to \"asc\" or \"desc\"."
        )));
    };
    let mut sort = Vec::with_capacity(keys.len());
    for (field, direction) in keys {
        if field.trim().is_empty() {
            return Err(invalid_field("sort names an empty column id.".to_owned()));
        }
        let descending = match direction.as_str().map(str::to_ascii_lowercase).as_deref() {
            Some("asc") => false,
            Some("desc") => true,
            _ => {
                return Err(QueryError::InvalidSortDirection(format!(
                    "sort direction {direction} of \"{field}\" is invalid; expected \"asc\" \
                         or \"desc\"."
                )))
            }
        };
        sort.push(RawSort { field, descending });
    }
    Ok(sort)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::error::Coded;

    fn code(result: QueryResult<impl std::fmt::Debug>) -> &'static str {
        result.expect_err("an error").code().as_str()
    }

    #[test]
    fn every_operator_parses_and_names_itself() {
        for (name, op) in OPS {
            assert_eq!(Op::parse(name), Some(op));
            assert_eq!(op.name(), name);
        }
        assert_eq!(Op::parse("CONTAINS"), None);
    }

    #[test]
    fn query_keeps_conditions_in_order() {
        let q = parse_query(r#"{"b": {"=": 1}, "a": {"isEmpty": null}, "c": {"in": ["x"]}}"#)
            .expect("valid");
        let fields: Vec<_> = q.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["b", "a", "c"]);
        assert_eq!(q[1].op, Op::IsEmpty);
        assert!(parse_query("").expect("blank").is_empty());
        assert!(parse_query(" {} ").expect("blank").is_empty());
    }

    #[test]
    fn query_errors_name_the_offending_part() {
        assert_eq!(code(parse_query("[1]")), "invalidFilterField");
        assert_eq!(code(parse_query("{not json")), "invalidFilterField");
        assert_eq!(code(parse_query(r#"{"": {"=": 1}}"#)), "invalidFilterField");
        assert_eq!(code(parse_query(r#"{"a": 1}"#)), "invalidFilterOperator");
        assert_eq!(code(parse_query(r#"{"a": {}}"#)), "invalidFilterOperator");
        assert_eq!(code(parse_query(r#"{"a": {"=": 1, "!=": 2}}"#)), "invalidFilterOperator");
        assert_eq!(code(parse_query(r#"{"a": {"like": 1}}"#)), "invalidFilterOperator");
        assert_eq!(code(parse_query(r#"{"a": {"=": null}}"#)), "missingFilterValue");
        assert_eq!(code(parse_query(r#"{"a": {"in": []}}"#)), "missingFilterValue");
        let e = parse_query(r#"{"a": {"like": 1}}"#).expect_err("bad");
        let message = e.to_string();
        assert!(message.contains("like") && message.contains('a'), "{message}");
    }

    #[test]
    fn sort_keeps_key_order_and_checks_directions() {
        let s = parse_sort(r#"{"z": "desc", "a": "ASC"}"#).expect("valid");
        assert_eq!(
            s,
            [
                RawSort { field: "z".into(), descending: true },
                RawSort { field: "a".into(), descending: false }
            ]
        );
        assert_eq!(code(parse_sort(r#"{"a": "up"}"#)), "invalidSortDirection");
        assert_eq!(code(parse_sort(r#"{"a": 1}"#)), "invalidSortDirection");
        assert_eq!(code(parse_sort(r#"["a"]"#)), "invalidSortField");
        assert_eq!(code(parse_sort(r#"{"": "asc"}"#)), "invalidSortField");
    }
}
