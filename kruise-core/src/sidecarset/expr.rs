//! The small arithmetic language of `resourcesPolicy.resourcesExpr`.
//!
//! An expression combines numbers (`2`, `0.5`), percentages (`50%`, read as `0.5`), resource
//! quantities (`50m`, `128Mi`), one variable (`cpu` or `memory`, bound to the aggregated value
//! of the target containers), the four operators `+ - * /` with the usual precedence,
//! parentheses, unary minus, and the two-argument functions `max(a, b)` and `min(a, b)`.
//!
//! The arithmetic follows upstream's calculator:
//! - adding or subtracting a number and a quantity treats the number as that many units;
//! - a quantity may be multiplied or divided by a number (computed on thousandths of a unit
//!   and truncated), never by another quantity;
//! - dividing by zero is an error.
//!
//! This is a parser of our own (recursive descent) rather than a port of upstream's generated
//! one; the accepted language and the results are meant to be the same.

use crate::revision::quantity::{Quantity, QuantityFormat};

/// Why an expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExprError {
    /// The text is not a well-formed expression.
    #[error("syntax error at offset {offset}: {message}")]
    Syntax {
        /// Byte offset of the problem.
        offset: usize,
        /// What was wrong.
        message: String,
    },
    /// A name that is neither the bound variable nor a function.
    #[error("undefined variable {0:?}")]
    UnknownVariable(String),
    /// A function other than `max` and `min`, or the wrong number of arguments.
    #[error("{0}")]
    BadCall(String),
    /// An operation the value types do not allow (quantity times quantity, ...).
    #[error("{0}")]
    BadOperation(String),
    /// A quantity literal that does not parse.
    #[error("invalid quantity {0:?}")]
    BadQuantity(String),
}

/// A value during evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// A plain number (percentages are already divided by 100).
    Number(f64),
    /// A resource quantity.
    Quantity(Quantity),
}

impl Value {
    fn to_quantity(self) -> Quantity {
        match self {
            Value::Quantity(q) => q,
            // Go converts through int64 thousandths, truncating.
            Value::Number(n) => {
                Quantity::from_milli((n * 1000.0) as i128, QuantityFormat::DecimalSi)
            }
        }
    }
}

/// Parses and evaluates `expr` with `variable` bound to `value`.
///
/// # Errors
/// When the expression is malformed or an operation is not allowed.
pub fn evaluate(expr: &str, variable: &str, value: Value) -> Result<Value, ExprError> {
    let tokens = lex(expr)?;
    let mut parser = Parser { tokens, pos: 0, variable, value };
    let out = parser.expr()?;
    if let Some((offset, tok)) = parser.tokens.get(parser.pos) {
        return Err(ExprError::Syntax { offset: *offset, message: format!("unexpected {tok:?}") });
    }
    Ok(out)
}

/// Whether `expr` is a valid expression over `variable` (checked with the variable bound to
/// the number 1, as upstream's admission check does).
///
/// # Errors
/// The reason it is not.
pub fn check(expr: &str, variable: &str) -> Result<(), ExprError> {
    evaluate(expr, variable, Value::Number(1.0)).map(|_| ())
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Number(f64),
    Quantity(String),
    Ident(String),
    Sym(char),
}

fn lex(text: &str) -> Result<Vec<(usize, Tok)>, ExprError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            // An exponent: `e` followed by digits, optionally signed.
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    while j < bytes.len() && bytes[j].is_ascii_digit() {
                        j += 1;
                    }
                    i = j;
                }
            }
            let number = &text[start..i];
            if i < bytes.len() && bytes[i] == b'%' {
                i += 1;
                let n: f64 = number.parse().map_err(|_| ExprError::Syntax {
                    offset: start,
                    message: format!("bad number {number:?}"),
                })?;
                out.push((start, Tok::Number(n / 100.0)));
            } else if i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                    i += 1;
                }
                out.push((start, Tok::Quantity(text[start..i].to_owned())));
            } else {
                let n: f64 = number.parse().map_err(|_| ExprError::Syntax {
                    offset: start,
                    message: format!("bad number {number:?}"),
                })?;
                out.push((start, Tok::Number(n)));
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((start, Tok::Ident(text[start..i].to_owned())));
        } else if "+-*/(),".contains(c) {
            out.push((i, Tok::Sym(c)));
            i += 1;
        } else {
            return Err(ExprError::Syntax {
                offset: i,
                message: format!(
                    "unexpected character {:?}",
                    &text[i..].chars().next().unwrap_or(c)
                ),
            });
        }
    }
    if out.is_empty() {
        return Err(ExprError::Syntax { offset: 0, message: "empty expression".into() });
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: Vec<(usize, Tok)>,
    pos: usize,
    variable: &'a str,
    value: Value,
}

impl Parser<'_> {
    fn peek_sym(&self) -> Option<char> {
        match self.tokens.get(self.pos) {
            Some((_, Tok::Sym(c))) => Some(*c),
            _ => None,
        }
    }

    fn offset(&self) -> usize {
        self.tokens
            .get(self.pos)
            .map_or_else(|| self.tokens.last().map_or(0, |(o, _)| *o + 1), |(o, _)| *o)
    }

    fn expect(&mut self, c: char) -> Result<(), ExprError> {
        if self.peek_sym() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(ExprError::Syntax { offset: self.offset(), message: format!("expected {c:?}") })
        }
    }

    fn expr(&mut self) -> Result<Value, ExprError> {
        let mut left = self.term()?;
        while let Some(op @ ('+' | '-')) = self.peek_sym() {
            self.pos += 1;
            let right = self.term()?;
            left = add(left, right, op == '-')?;
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Value, ExprError> {
        let mut left = self.factor()?;
        while let Some(op @ ('*' | '/')) = self.peek_sym() {
            self.pos += 1;
            let right = self.factor()?;
            left = if op == '*' { mul(left, right)? } else { div(left, right)? };
        }
        Ok(left)
    }

    fn factor(&mut self) -> Result<Value, ExprError> {
        let offset = self.offset();
        let Some((_, tok)) = self.tokens.get(self.pos).cloned() else {
            return Err(ExprError::Syntax { offset, message: "unexpected end".into() });
        };
        self.pos += 1;
        match tok {
            Tok::Number(n) => Ok(Value::Number(n)),
            Tok::Quantity(text) => Quantity::parse(&text)
                .map(Value::Quantity)
                .map_err(|_| ExprError::BadQuantity(text)),
            Tok::Sym('(') => {
                let inner = self.expr()?;
                self.expect(')')?;
                Ok(inner)
            }
            Tok::Sym('-') => Ok(match self.factor()? {
                Value::Number(n) => Value::Number(-n),
                Value::Quantity(q) => Value::Quantity(q.negated()),
            }),
            Tok::Ident(name) if self.peek_sym() == Some('(') => {
                self.pos += 1;
                let mut args = vec![self.expr()?];
                while self.peek_sym() == Some(',') {
                    self.pos += 1;
                    args.push(self.expr()?);
                }
                self.expect(')')?;
                call(&name, &args)
            }
            Tok::Ident(name) => {
                if name.to_ascii_lowercase() == self.variable {
                    Ok(self.value)
                } else {
                    Err(ExprError::UnknownVariable(name))
                }
            }
            Tok::Sym(c) => Err(ExprError::Syntax { offset, message: format!("unexpected {c:?}") }),
        }
    }
}

fn add(left: Value, right: Value, subtract: bool) -> Result<Value, ExprError> {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => {
            Ok(Value::Number(if subtract { a - b } else { a + b }))
        }
        (a, b) => {
            let b = if subtract { b.to_quantity().negated() } else { b.to_quantity() };
            a.to_quantity()
                .checked_add(&b)
                .map(Value::Quantity)
                .ok_or_else(|| ExprError::BadOperation("quantity overflow".into()))
        }
    }
}

fn scale(q: &Quantity, factor: f64, divide: bool) -> Result<Value, ExprError> {
    let milli =
        q.milli_value().ok_or_else(|| ExprError::BadOperation("quantity overflow".into()))?;
    let scaled = if divide { milli as f64 / factor } else { milli as f64 * factor };
    Ok(Value::Quantity(Quantity::from_milli(scaled as i128, q.format())))
}

fn mul(left: Value, right: Value) -> Result<Value, ExprError> {
    match (left, right) {
        (Value::Quantity(_), Value::Quantity(_)) => {
            Err(ExprError::BadOperation("multiplication of two quantities".into()))
        }
        (Value::Quantity(q), Value::Number(n)) | (Value::Number(n), Value::Quantity(q)) => {
            scale(&q, n, false)
        }
        (Value::Number(a), Value::Number(b)) => Ok(Value::Number(a * b)),
    }
}

fn div(left: Value, right: Value) -> Result<Value, ExprError> {
    match (left, right) {
        (_, Value::Quantity(_)) => Err(ExprError::BadOperation("division by quantity".into())),
        (_, Value::Number(0.0)) => Err(ExprError::BadOperation("division by zero".into())),
        (Value::Quantity(q), Value::Number(n)) => scale(&q, n, true),
        (Value::Number(a), Value::Number(b)) => Ok(Value::Number(a / b)),
    }
}

fn call(name: &str, args: &[Value]) -> Result<Value, ExprError> {
    let want_max = match name.to_ascii_lowercase().as_str() {
        "max" => true,
        "min" => false,
        _ => return Err(ExprError::BadCall(format!("unknown function: {name}"))),
    };
    let [left, right] = args else {
        return Err(ExprError::BadCall(format!(
            "{} function requires exactly 2 arguments, got {}",
            name.to_ascii_lowercase(),
            args.len()
        )));
    };
    let pick_left = |ord: std::cmp::Ordering| {
        if want_max { ord.is_ge() } else { ord.is_le() }
    };
    Ok(match (*left, *right) {
        (Value::Number(a), Value::Number(b)) => {
            let ord = a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal);
            Value::Number(if pick_left(ord) { a } else { b })
        }
        (a, b) => {
            let (qa, qb) = (a.to_quantity(), b.to_quantity());
            Value::Quantity(if pick_left(qa.cmp_value(&qb)) { qa } else { qb })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Value {
        Value::Quantity(Quantity::parse(text).expect("quantity"))
    }

    fn eval(expr: &str, var: &str, value: Value) -> String {
        match evaluate(expr, var, value).expect("evaluates") {
            Value::Number(n) => format!("{n}"),
            Value::Quantity(q) => q.to_canonical(),
        }
    }

    #[test]
    fn arithmetic_on_quantities() {
        assert_eq!(eval("cpu*50%", "cpu", q("200m")), "100m");
        assert_eq!(eval("max(cpu*50%, 50m)", "cpu", q("200m")), "100m");
        assert_eq!(eval("max(cpu*10%, 50m)", "cpu", q("200m")), "50m");
        assert_eq!(eval("min(cpu, 1)", "cpu", q("2")), "1");
        assert_eq!(eval("memory / 2", "memory", q("512Mi")), "256Mi");
        assert_eq!(eval("memory + 100Mi", "memory", q("1Gi")), "1124Mi");
        assert_eq!(eval("(cpu - 100m) * 2", "cpu", q("1")), "1800m");
        assert_eq!(eval("-cpu + 1", "cpu", q("200m")), "800m");
        assert_eq!(eval("2 + 3 * 4", "cpu", q("1")), "14");
        assert_eq!(eval("CPU", "cpu", q("1")), "1");
    }

    #[test]
    fn errors() {
        assert!(matches!(evaluate("cpu * cpu", "cpu", q("1")), Err(ExprError::BadOperation(_))));
        assert!(matches!(evaluate("cpu / 0", "cpu", q("1")), Err(ExprError::BadOperation(_))));
        assert!(matches!(evaluate("1 / cpu", "cpu", q("1")), Err(ExprError::BadOperation(_))));
        assert!(matches!(evaluate("gpu * 2", "cpu", q("1")), Err(ExprError::UnknownVariable(_))));
        assert!(matches!(evaluate("avg(cpu, 1)", "cpu", q("1")), Err(ExprError::BadCall(_))));
        assert!(matches!(evaluate("max(cpu)", "cpu", q("1")), Err(ExprError::BadCall(_))));
        assert!(matches!(evaluate("cpu *", "cpu", q("1")), Err(ExprError::Syntax { .. })));
        assert!(matches!(evaluate("(cpu", "cpu", q("1")), Err(ExprError::Syntax { .. })));
        assert!(matches!(evaluate("", "cpu", q("1")), Err(ExprError::Syntax { .. })));
        assert!(matches!(evaluate("cpu $ 2", "cpu", q("1")), Err(ExprError::Syntax { .. })));
        assert!(matches!(evaluate("5Zi", "cpu", q("1")), Err(ExprError::BadQuantity(_))));
        assert!(check("max(cpu*50%, 50m)", "cpu").is_ok());
        assert!(check("memory*2", "memory").is_ok());
    }
}
