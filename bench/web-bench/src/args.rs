//! Command-line options: `--name value` pairs and `--switch`es, each command with its help.

use std::collections::HashMap;
use std::str::FromStr;

/// One option a command takes: its name, whether it takes a value, what it means.
pub struct Opt {
    pub name: &'static str,
    pub value: Option<&'static str>,
    pub help: &'static str,
}

/// What was given on the command line.
#[derive(Debug, Default)]
pub struct Given {
    values: HashMap<&'static str, String>,
    switches: Vec<&'static str>,
}

/// Why the command line was not taken.
#[derive(Debug)]
pub enum Refused {
    /// `--help` was asked for: the help, to be printed (exit 0).
    Help(String),
    /// A mistake: what it was, and the help (exit 2).
    Usage(String),
}

/// Reads `args` by `opts`; `--help` anywhere gives the help (`about` first).
pub fn parse(args: &[String], opts: &[Opt], about: &str) -> Result<Given, Refused> {
    let help = || help_text(opts, about);
    let mut given = Given::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--help" || arg == "-h" {
            return Err(Refused::Help(help()));
        }
        let Some(opt) = opts.iter().find(|o| o.name == arg) else {
            return Err(Refused::Usage(format!(
                "unknown option {arg}\n\n{}",
                help()
            )));
        };
        match opt.value {
            Some(what) => {
                let Some(value) = it.next() else {
                    return Err(Refused::Usage(format!("{arg} needs {what}\n\n{}", help())));
                };
                given.values.insert(opt.name, value.clone());
            }
            None => given.switches.push(opt.name),
        }
    }
    Ok(given)
}

fn help_text(opts: &[Opt], about: &str) -> String {
    let mut out = format!("{about}\n\nOptions:\n");
    for o in opts {
        let left = match o.value {
            Some(v) => format!("{} {v}", o.name),
            None => o.name.to_owned(),
        };
        out.push_str(&format!("  {left:<22} {}\n", o.help));
    }
    out.push_str("  --help                 this help\n");
    out
}

impl Given {
    /// The value of `name` read as a `T`, `None` when not given.
    pub fn get<T: FromStr>(&self, name: &str) -> Result<Option<T>, Refused> {
        match self.values.get(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Refused::Usage(format!("{name}: cannot read {v:?}"))),
        }
    }

    /// The value of `name`, or `default`.
    pub fn get_or<T: FromStr>(&self, name: &str, default: T) -> Result<T, Refused> {
        Ok(self.get(name)?.unwrap_or(default))
    }

    /// The value of `name`, which must be given.
    pub fn need<T: FromStr>(&self, name: &str) -> Result<T, Refused> {
        self.get(name)?
            .ok_or_else(|| Refused::Usage(format!("{name} is needed (see --help)")))
    }

    pub fn has(&self, name: &str) -> bool {
        self.switches.contains(&name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPTS: &[Opt] = &[
        Opt {
            name: "-n",
            value: Some("N"),
            help: "how many",
        },
        Opt {
            name: "--quick",
            value: None,
            help: "shorter",
        },
    ];

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_are_read_and_mistakes_refused() {
        let g = parse(&args("-n 5 --quick"), OPTS, "about").unwrap();
        assert_eq!(g.get::<u32>("-n").unwrap(), Some(5));
        assert!(g.has("--quick"));
        assert!(
            matches!(parse(&args("--help"), OPTS, "x"), Err(Refused::Help(h)) if h.contains("how many"))
        );
        assert!(matches!(
            parse(&args("-n"), OPTS, "x"),
            Err(Refused::Usage(_))
        ));
        assert!(matches!(
            parse(&args("--what"), OPTS, "x"),
            Err(Refused::Usage(_))
        ));
        let g = parse(&args("-n five"), OPTS, "x").unwrap();
        assert!(g.get::<u32>("-n").is_err());
        assert!(parse(&[], OPTS, "x").unwrap().need::<u32>("-n").is_err());
    }
}
