//! The values `#[validate(...)]` takes: numbers (negative too) and allowed values.

use darling::{Error, FromMeta, Result};
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Lit, UnOp};

/// A numeric literal, possibly negative.
#[derive(Debug, Clone)]
pub(crate) struct Num {
    pub value: NumValue,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum NumValue {
    Int(i64),
    Float(f64),
}

impl NumValue {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Self::Int(i) => i as f64,
            Self::Float(f) => f,
        }
    }
}

impl std::fmt::Display for NumValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => write!(f, "{x:?}"),
        }
    }
}

fn num_from_expr(expr: &Expr) -> Result<NumValue> {
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i
                .base10_parse::<i64>()
                .map(NumValue::Int)
                .map_err(|_| Error::custom("this integer does not fit in a 64-bit BSON long").with_span(i)),
            Lit::Float(f) => match f.base10_parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(NumValue::Float(x)),
                Ok(_) => Err(Error::custom("this number is too large for a BSON double").with_span(f)),
                Err(e) => Err(Error::custom(e.to_string()).with_span(f)),
            },
            other => Err(Error::custom("expected a number, like `0`, `-5` or `2.5`").with_span(other)),
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match num_from_expr(&u.expr)? {
            NumValue::Int(i) => i.checked_neg().map(NumValue::Int).ok_or_else(|| {
                Error::custom("this integer does not fit in a 64-bit BSON long").with_span(&u.expr)
            }),
            NumValue::Float(f) => Ok(NumValue::Float(-f)),
        },
        Expr::Group(g) => num_from_expr(&g.expr),
        other => Err(Error::custom("expected a number, like `0`, `-5` or `2.5`").with_span(other)),
    }
}

impl FromMeta for Num {
    fn from_expr(expr: &Expr) -> Result<Self> {
        Ok(Self { value: num_from_expr(expr)?, span: expr.span() })
    }
}

/// One value of `allowed = [...]`.
#[derive(Debug, Clone)]
pub(crate) enum AllowedValue {
    Str(String, Span),
    Num(Num),
    Bool(bool, Span),
}

impl AllowedValue {
    pub(crate) fn span(&self) -> Span {
        match self {
            Self::Str(_, s) | Self::Bool(_, s) => *s,
            Self::Num(n) => n.span,
        }
    }
}

/// `allowed = ["a", "b"]` or `allowed = [1, 2, 3]`.
#[derive(Debug, Clone)]
pub(crate) struct Allowed {
    pub values: Vec<AllowedValue>,
    pub span: Span,
}

impl FromMeta for Allowed {
    fn from_expr(expr: &Expr) -> Result<Self> {
        let Expr::Array(array) = expr else {
            return Err(
                Error::custom("expected a list of values, like `allowed = [\"a\", \"b\"]`").with_span(expr)
            );
        };
        let mut errors = Error::accumulator();
        let mut values = Vec::new();
        for elem in &array.elems {
            let value = match elem {
                Expr::Lit(l) => match &l.lit {
                    Lit::Str(s) => Some(AllowedValue::Str(s.value(), s.span())),
                    Lit::Bool(b) => Some(AllowedValue::Bool(b.value, b.span())),
                    _ => errors.handle(Num::from_expr(elem)).map(AllowedValue::Num),
                },
                _ => errors.handle(Num::from_expr(elem)).map(AllowedValue::Num),
            };
            values.extend(value);
        }
        errors.finish_with(Self { values, span: expr.span() })
    }
}
