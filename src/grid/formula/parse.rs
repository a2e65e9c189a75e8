//! The formula lexer and parser: text to `Expr`, with the grammar of the module doc above.
//! Knows nothing of columns or records; `check` (in `mod.rs`) resolves the names.

use std::fmt;

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Concat,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Number(f64),
    Text(String),
    Boolean(bool),
    /// `[columnId]`.
    Column(String),
    Negate(Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// A function call; the name is upper-cased.
    Call(String, Vec<Expr>),
}

/// Why a formula does not parse, with the character offset where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub at: usize,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at character {}", self.message, self.at + 1)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Text(String),
    Column(String),
    Name(String),
    Op(BinaryOp),
    Open,
    Close,
    Comma,
}

/// A token and the character offset (in chars) where it starts and ends.
#[derive(Debug, Clone)]
struct Spanned {
    token: Token,
    start: usize,
    end: usize,
}

/// The longest formula text accepted, in characters, and the deepest nesting: a formula is
/// parsed and evaluated recursively, so a hostile text must not exhaust the stack.
pub const MAX_LENGTH: usize = 10_000;
pub const MAX_DEPTH: usize = 64;

fn error(at: usize, message: impl Into<String>) -> SyntaxError {
    SyntaxError { at, message: message.into() }
}

/// The tokens of a formula, each with its span in characters.
fn lex(text: &str) -> Result<Vec<Spanned>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (c, start) = (chars[i], i);
        let token = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '"' => lex_text(&chars, &mut i)?,
            '[' => lex_column(&chars, &mut i)?,
            c if c.is_ascii_digit() || c == '.' => lex_number(&chars, &mut i)?,
            c if c.is_alphabetic() || c == '_' => {
                while i < chars.len()
                    && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
                {
                    i += 1;
                }
                Token::Name(chars[start..i].iter().collect::<String>().to_uppercase())
            }
            _ => lex_symbol(&chars, &mut i)?,
        };
        tokens.push(Spanned { token, start, end: i });
    }
    Ok(tokens)
}

/// A quoted string at `chars[*i]` (`""` inside is one quote); `*i` moves past it.
fn lex_text(chars: &[char], i: &mut usize) -> Result<Token, SyntaxError> {
    let start = *i;
    let mut s = String::new();
    *i += 1;
    loop {
        match chars.get(*i) {
            None => return Err(error(start, "unterminated string")),
            Some('"') if chars.get(*i + 1) == Some(&'"') => {
                s.push('"');
                *i += 2;
            }
            Some('"') => {
                *i += 1;
                return Ok(Token::Text(s));
            }
            Some(&c) => {
                s.push(c);
                *i += 1;
            }
        }
    }
}

/// A `[column id]` reference at `chars[*i]`; `*i` moves past it.
fn lex_column(chars: &[char], i: &mut usize) -> Result<Token, SyntaxError> {
    let start = *i;
    let close = chars[start..]
        .iter()
        .position(|&c| c == ']')
        .ok_or_else(|| error(start, "unterminated column reference"))?;
    let id: String = chars[start + 1..start + close].iter().collect();
    if id.trim().is_empty() {
        return Err(error(start, "empty column reference"));
    }
    *i += close + 1;
    Ok(Token::Column(id))
}

/// A number (digits and points, an optional exponent) at `chars[*i]`; `*i` moves past it.
fn lex_number(chars: &[char], i: &mut usize) -> Result<Token, SyntaxError> {
    let start = *i;
    while *i < chars.len() && (chars[*i].is_ascii_digit() || chars[*i] == '.') {
        *i += 1;
    }
    if matches!(chars.get(*i), Some('e' | 'E'))
        && chars.get(*i + 1).is_some_and(|c| c.is_ascii_digit() || *c == '-' || *c == '+')
    {
        *i += 2;
        while *i < chars.len() && chars[*i].is_ascii_digit() {
            *i += 1;
        }
    }
    let literal: String = chars[start..*i].iter().collect();
    let n: f64 =
        literal.parse().map_err(|_| error(start, format!("invalid number \"{literal}\"")))?;
    Ok(Token::Number(n))
}

/// An operator, a parenthesis or an argument separator at `chars[*i]`; `*i` moves past it.
fn lex_symbol(chars: &[char], i: &mut usize) -> Result<Token, SyntaxError> {
    let (c, next) = (chars[*i], chars.get(*i + 1).copied());
    let (token, width) = match (c, next) {
        ('<', Some('>')) | ('!', Some('=')) => (Token::Op(BinaryOp::Ne), 2),
        ('<', Some('=')) => (Token::Op(BinaryOp::Le), 2),
        ('>', Some('=')) => (Token::Op(BinaryOp::Ge), 2),
        ('<', _) => (Token::Op(BinaryOp::Lt), 1),
        ('>', _) => (Token::Op(BinaryOp::Gt), 1),
        ('=', _) => (Token::Op(BinaryOp::Eq), 1),
        ('+', _) => (Token::Op(BinaryOp::Add), 1),
        ('-', _) => (Token::Op(BinaryOp::Sub), 1),
        ('*', _) => (Token::Op(BinaryOp::Mul), 1),
        ('/', _) => (Token::Op(BinaryOp::Div), 1),
        ('^', _) => (Token::Op(BinaryOp::Pow), 1),
        ('&', _) => (Token::Op(BinaryOp::Concat), 1),
        ('(', _) => (Token::Open, 1),
        (')', _) => (Token::Close, 1),
        (',' | ';', _) => (Token::Comma, 1),
        _ => return Err(error(*i, format!("unexpected character '{c}'"))),
    };
    *i += width;
    Ok(token)
}

/// Binding power of a binary operator: higher binds tighter.
fn precedence(op: BinaryOp) -> u8 {
    match op {
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            1
        }
        BinaryOp::Concat => 2,
        BinaryOp::Add | BinaryOp::Sub => 3,
        BinaryOp::Mul | BinaryOp::Div => 4,
        BinaryOp::Pow => 5,
    }
}

/// Unary minus binds tighter than every binary operator, `^` included, as in spreadsheets:
/// `-2^2` is 4.
const UNARY_PRECEDENCE: u8 = 6;

struct Parser {
    tokens: Vec<Spanned>,
    at: usize,
    length: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|t| &t.token)
    }

    fn position(&self) -> usize {
        self.tokens.get(self.at).map_or(self.length, |t| t.start)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).map(|t| t.token.clone());
        self.at += 1;
        token
    }

    fn expression(&mut self, min: u8) -> Result<Expr, SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(error(self.position(), "the formula nests too deeply"));
        }
        let mut left = self.operand()?;
        while let Some(Token::Op(op)) = self.peek() {
            let op = *op;
            let power = precedence(op);
            if power < min {
                break;
            }
            self.at += 1;
            // `^` is right-associative, the others left-associative.
            let next_min = if op == BinaryOp::Pow { power } else { power + 1 };
            let right = self.expression(next_min)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn operand(&mut self) -> Result<Expr, SyntaxError> {
        let at = self.position();
        match self.next() {
            Some(Token::Number(n)) => Ok(Expr::Number(n)),
            Some(Token::Text(s)) => Ok(Expr::Text(s)),
            Some(Token::Column(id)) => Ok(Expr::Column(id)),
            Some(Token::Op(BinaryOp::Sub)) => {
                Ok(Expr::Negate(Box::new(self.expression(UNARY_PRECEDENCE)?)))
            }
            Some(Token::Op(BinaryOp::Add)) => self.expression(UNARY_PRECEDENCE),
            Some(Token::Open) => {
                let inner = self.expression(0)?;
                self.expect_close()?;
                Ok(inner)
            }
            Some(Token::Name(name)) if self.peek() == Some(&Token::Open) => {
                self.at += 1;
                let mut args = Vec::new();
                if self.peek() == Some(&Token::Close) {
                    self.at += 1;
                    return Ok(Expr::Call(name, args));
                }
                loop {
                    args.push(self.expression(0)?);
                    match self.next() {
                        Some(Token::Comma) => continue,
                        Some(Token::Close) => break,
                        _ => return Err(error(self.position(), "expected ',' or ')'")),
                    }
                }
                Ok(Expr::Call(name, args))
            }
            Some(Token::Name(name)) => match name.as_str() {
                "TRUE" => Ok(Expr::Boolean(true)),
                "FALSE" => Ok(Expr::Boolean(false)),
                _ => Err(error(at, format!("unknown name \"{name}\" (a column is written [id])"))),
            },
            Some(token) => Err(error(at, format!("unexpected {}", describe(&token)))),
            None => Err(error(at, "the formula ends too early")),
        }
    }

    fn expect_close(&mut self) -> Result<(), SyntaxError> {
        match self.next() {
            Some(Token::Close) => Ok(()),
            _ => Err(error(self.position(), "expected ')'")),
        }
    }
}

fn describe(token: &Token) -> &'static str {
    match token {
        Token::Number(_) => "number",
        Token::Text(_) => "string",
        Token::Column(_) => "column reference",
        Token::Name(_) => "name",
        Token::Op(_) => "operator",
        Token::Open => "'('",
        Token::Close => "')'",
        Token::Comma => "','",
    }
}

/// Parses a formula.
pub fn parse(text: &str) -> Result<Expr, SyntaxError> {
    let length = text.chars().count();
    if length > MAX_LENGTH {
        return Err(error(
            MAX_LENGTH,
            format!("the formula is longer than {MAX_LENGTH} characters"),
        ));
    }
    let tokens = lex(text)?;
    if tokens.is_empty() {
        return Err(error(0, "the formula is empty"));
    }
    let mut parser = Parser { tokens, at: 0, length, depth: 0 };
    let expr = parser.expression(0)?;
    if parser.at < parser.tokens.len() {
        return Err(error(parser.position(), "unexpected text after the end of the formula"));
    }
    Ok(expr)
}

/// The formula text with every `[old]` reference renamed to `[new]`, the rest kept as written;
/// `None` when the text does not lex or names no `[old]`.
pub fn rename_column(text: &str, old: &str, new: &str) -> Option<String> {
    let tokens = lex(text).ok()?;
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut renamed = false;
    for t in tokens {
        if matches!(&t.token, Token::Column(id) if id == old) {
            out.extend(&chars[copied..t.start]);
            out.push('[');
            out.push_str(new);
            out.push(']');
            copied = t.end;
            renamed = true;
        }
    }
    out.extend(&chars[copied..]);
    renamed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(n: f64) -> Box<Expr> {
        Box::new(Expr::Number(n))
    }

    #[test]
    fn precedence_follows_spreadsheets() {
        assert_eq!(
            parse("1 + 2 * 3").expect("parses"),
            Expr::Binary(
                BinaryOp::Add,
                num(1.0),
                Box::new(Expr::Binary(BinaryOp::Mul, num(2.0), num(3.0)))
            )
        );
        assert_eq!(
            parse("-2^2").expect("parses"),
            Expr::Binary(BinaryOp::Pow, Box::new(Expr::Negate(num(2.0))), num(2.0))
        );
        assert_eq!(
            parse("2^-1").expect("parses"),
            Expr::Binary(BinaryOp::Pow, num(2.0), Box::new(Expr::Negate(num(1.0))))
        );
        assert_eq!(
            parse("2^3^2").expect("parses"),
            Expr::Binary(
                BinaryOp::Pow,
                num(2.0),
                Box::new(Expr::Binary(BinaryOp::Pow, num(3.0), num(2.0)))
            )
        );
        assert!(matches!(
            parse("1 & 2 = \"12\"").expect("parses"),
            Expr::Binary(BinaryOp::Eq, _, _)
        ));
    }

    #[test]
    fn literals_columns_and_calls() {
        assert_eq!(parse("\"say \"\"hi\"\"\"").expect("parses"), Expr::Text("say \"hi\"".into()));
        assert_eq!(parse("true").expect("parses"), Expr::Boolean(true));
        assert_eq!(parse(".5").expect("parses"), Expr::Number(0.5));
        assert_eq!(parse("1e3").expect("parses"), Expr::Number(1000.0));
        assert_eq!(
            parse("concat([en US], \"]\")").expect("parses"),
            Expr::Call("CONCAT".into(), vec![Expr::Column("en US".into()), Expr::Text("]".into())])
        );
        assert_eq!(parse("NOW()").expect("parses"), Expr::Call("NOW".into(), vec![]));
    }

    #[test]
    fn malformed_formulas_are_refused() {
        for text in [
            "",
            "  ",
            "1 +",
            "(1",
            "1)",
            "[a",
            "[]",
            "\"open",
            "CONCAT([a]",
            "[a] [b]",
            "1 ? 2",
            "foo",
            "SUM(1,)",
            "1..2",
        ] {
            assert!(parse(text).is_err(), "{text:?} parsed");
        }
    }

    #[test]
    fn hostile_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(parse(&deep).is_err());
        let long = "1+".repeat(MAX_LENGTH) + "1";
        assert!(parse(&long).is_err());
        let minus = format!("{}1", "-".repeat(1000));
        assert!(parse(&minus).is_err());
    }

    #[test]
    fn renaming_keeps_the_rest_of_the_text() {
        assert_eq!(
            rename_column("CONCAT([a], \"[a]\",  [b]&[a])", "a", "z").as_deref(),
            Some("CONCAT([z], \"[a]\",  [b]&[z])")
        );
        assert_eq!(rename_column("[b]", "a", "z"), None);
    }
}
