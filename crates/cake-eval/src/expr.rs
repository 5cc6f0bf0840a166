//! The contract's arithmetic over dimensions (`bench.flops = "2*M*N*K"`): integers, names,
//! `+ - * /` (exact division of the f64 values) and parentheses.

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Num(f64),
    Name(String),
    Bin(Box<Expr>, char, Box<Expr>),
}

impl Expr {
    pub fn parse(text: &str) -> Result<Expr, String> {
        let tokens = tokenize(text)?;
        let mut p = Parser { tokens, at: 0 };
        let e = p.sum()?;
        match p.tokens.get(p.at) {
            None => Ok(e),
            Some(t) => Err(format!("unexpected `{t}` in `{text}`")),
        }
    }

    /// The dimension names the expression reads.
    pub fn names(&self) -> Vec<String> {
        match self {
            Expr::Num(_) => vec![],
            Expr::Name(n) => vec![n.clone()],
            Expr::Bin(a, _, b) => {
                let mut v = a.names();
                v.extend(b.names());
                v
            }
        }
    }

    /// Value with every name bound by `lookup`; `None` when a name is unbound.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Expr::Num(n) => *n,
            Expr::Name(n) => lookup(n)?,
            Expr::Bin(a, op, b) => {
                let (a, b) = (a.eval(lookup)?, b.eval(lookup)?);
                match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    _ => a / b,
                }
            }
        })
    }
}

fn tokenize(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if "+-*/()".contains(c) {
            out.push(c.to_string());
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else {
            return Err(format!("unexpected character `{c}` in `{text}`"));
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<String>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut e = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek() {
            let op = op.chars().next().unwrap_or('+');
            self.at += 1;
            e = Expr::Bin(Box::new(e), op, Box::new(self.product()?));
        }
        Ok(e)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut e = self.atom()?;
        while let Some(op @ ("*" | "/")) = self.peek() {
            let op = op.chars().next().unwrap_or('*');
            self.at += 1;
            e = Expr::Bin(Box::new(e), op, Box::new(self.atom()?));
        }
        Ok(e)
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let Some(t) = self.peek().map(str::to_string) else {
            return Err("the expression ends early".into());
        };
        self.at += 1;
        if t == "(" {
            let e = self.sum()?;
            if self.peek() != Some(")") {
                return Err("missing `)`".into());
            }
            self.at += 1;
            return Ok(e);
        }
        if let Ok(n) = t.parse::<f64>() {
            return Ok(Expr::Num(n));
        }
        if t.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            return Ok(Expr::Name(t));
        }
        Err(format!("unexpected `{t}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::Expr;

    fn eval(text: &str) -> f64 {
        Expr::parse(text)
            .unwrap()
            .eval(&|n| match n {
                "M" => Some(2.0),
                "N" => Some(3.0),
                "K" => Some(5.0),
                _ => None,
            })
            .unwrap()
    }

    #[test]
    fn precedence_and_parentheses() {
        assert_eq!(eval("2*M*N*K"), 60.0);
        assert_eq!(eval("2*(M*K + N*K + M*N)"), 2.0 * (10.0 + 15.0 + 6.0));
        assert_eq!(eval("M + N * K"), 17.0);
        assert_eq!(eval("(M + N) * K / 5"), 5.0);
        assert_eq!(eval("K - M - N"), 0.0);
    }

    #[test]
    fn errors_say_what() {
        assert!(Expr::parse("2*").unwrap_err().contains("ends early"));
        assert!(Expr::parse("(M").unwrap_err().contains("missing `)`"));
        assert!(Expr::parse("M $ N").unwrap_err().contains('$'));
        assert!(Expr::parse("M N").unwrap_err().contains("unexpected `N`"));
        assert_eq!(Expr::parse("M*Q").unwrap().names(), vec!["M", "Q"]);
    }
}
