//! Binding call arguments to a builtin's signature, with located errors for every mismatch.

use crate::value::Value;
use crate::vocab::Param;
use cake_diag::Span;

/// Arguments of one call, evaluated.
pub struct CallArgs {
    pub span: Span,
    pub positional: Vec<(Value, Span)>,
    pub keywords: Vec<(String, Value, Span)>,
}

/// A problem binding arguments: the span to point at and the message.
pub struct ArgError {
    pub span: Span,
    pub message: String,
    pub help: Option<String>,
}

/// Bind `args` to `params` (in positional order) of the function `func` names. Returns one
/// slot per parameter.
pub fn bind(
    func: &str,
    params: &[Param<'_>],
    args: CallArgs,
) -> Result<Vec<Option<(Value, Span)>>, ArgError> {
    let names: Vec<&str> = params.iter().map(|p| p.name).collect();
    let mut slots: Vec<Option<(Value, Span)>> = vec![None; params.len()];
    if args.positional.len() > params.len() {
        let (_, extra) = &args.positional[params.len()];
        return Err(ArgError {
            span: *extra,
            message: format!(
                "`{func}` takes at most {} positional argument{}, got {}",
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                args.positional.len()
            ),
            help: Some(format!("its parameters are: {}", names.join(", "))),
        });
    }
    for (i, (v, s)) in args.positional.into_iter().enumerate() {
        slots[i] = Some((v, s));
    }
    for (name, v, s) in args.keywords {
        let Some(i) = names.iter().position(|n| *n == name) else {
            let help = match crate::suggest::closest(&name, names.iter().copied()) {
                Some(c) => format!("did you mean `{c}`? `{func}` accepts: {}", names.join(", ")),
                None => format!("`{func}` accepts: {}", names.join(", ")),
            };
            return Err(ArgError {
                span: s,
                message: format!("`{func}` has no parameter `{name}`"),
                help: Some(help),
            });
        };
        if slots[i].is_some() {
            return Err(ArgError {
                span: s,
                message: format!("argument `{name}` of `{func}` given twice"),
                help: None,
            });
        }
        slots[i] = Some((v, s));
    }
    for (i, p) in params.iter().enumerate() {
        if p.required && slots[i].is_none() {
            return Err(ArgError {
                span: args.span,
                message: format!("`{func}` is missing its argument `{}`", names[i]),
                help: Some(format!("`{func}` takes: {}", signature(params))),
            });
        }
    }
    Ok(slots)
}

/// `a, b (optional)`: the parameters as help text lists them.
fn signature(params: &[Param<'_>]) -> String {
    let shown: Vec<String> = params
        .iter()
        .map(|p| match p.required {
            true => p.name.to_string(),
            false => format!("{} (optional)", p.name),
        })
        .collect();
    shown.join(", ")
}
