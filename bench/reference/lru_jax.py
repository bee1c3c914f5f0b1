"""The LRU models of lruc, written plainly in JAX.

As the paper's Appendix A writes it: parameters in a flat dictionary keyed
by lruc's names (`blocks.0.lru.nu_log`, so an lruc safetensors checkpoint
loads as it is), pure functions, and the recurrence as
`jax.lax.associative_scan` over (λ, b) pairs. BatchNorm and pooling ignore
padded steps, the reverse scan starts at each sequence's real end, and
dropout draws lruc's masks (philox.py), so the same weights and inputs give
the same loss, predictions and gradients.
"""

import jax
import jax.numpy as jnp
import numpy as np

from philox import keep_mask

RECURRENT = ("nu_log", "theta_log", "gamma_log", "B_re", "B_im", "U")


def _binary_operator(left, right):
    a_i, b_i = left
    a_j, b_j = right
    return a_j * a_i, a_j * b_i + b_j


def scan(lam, b, reverse=False):
    """x_t = lam_t * x_{t-1} + b_t along axis 1 (x_{-1} = 0)."""
    a = jnp.broadcast_to(lam, b.shape)
    return jax.lax.associative_scan(_binary_operator, (a, b), reverse=reverse,
                                    axis=1)[1]


def prefix_mask(lengths, steps):
    return (jnp.arange(steps)[None, :] < lengths[:, None]).astype(jnp.float32)


def linear(p, prefix, x, bias=True):
    y = x @ p[prefix + ".weight"].T
    return y + p[prefix + ".bias"] if bias else y


def activation(name, x, approximate=False):
    if name == "gelu":
        return jax.nn.gelu(x, approximate=approximate)
    return {"relu": jax.nn.relu, "tanh": jnp.tanh}[name](x)


def readout(x, p, re, im):
    return x.real @ p[re].T - x.imag @ p[im].T


def lru(p, prefix, u, mask, args):
    lam = jnp.exp(-jnp.exp(p[prefix + ".nu_log"])
                  + 1j * jnp.exp(p[prefix + ".theta_log"]))
    B_re, B_im = p[prefix + ".B_re"], p[prefix + ".B_im"]
    if args["gamma_norm"]:
        gamma = jnp.exp(p[prefix + ".gamma_log"])[:, None]
        B_re, B_im = B_re * gamma, B_im * gamma
    b = (u @ B_re.T + 1j * (u @ B_im.T)) * mask[..., None]
    y = readout(scan(lam, b), p, prefix + ".C_re", prefix + ".C_im")
    if args["bidirectional"]:
        y = y + readout(scan(lam, b, reverse=True), p, prefix + ".C_rev_re",
                        prefix + ".C_rev_im")
    return (y + p[prefix + ".D"] * u) * mask[..., None]


def glru(p, prefix, u, mask, args):
    g = u @ p[prefix + ".U"].T
    nu = jnp.exp(p[prefix + ".nu_log"])
    a = g - nu if args["form"] == "plain" else -jax.nn.softplus(nu - g)
    lam = jnp.exp(a + 1j * jnp.exp(p[prefix + ".theta_log"]))
    b = (u @ p[prefix + ".B_re"].T + 1j * (u @ p[prefix + ".B_im"].T)) \
        * mask[..., None]
    x = scan(lam, b)
    if args["form"] == "normalized":
        ones = jnp.broadcast_to(mask[..., None], a.shape)
        norm = scan(jnp.exp(a), ones)
        x = x / jnp.where(ones > 0, norm, 1.0)
    y = readout(x, p, prefix + ".C_re", prefix + ".C_im")
    return (y + p[prefix + ".D"] * u) * mask[..., None]


def batch_norm(p, state, prefix, x, mask, train, momentum=0.1, eps=1e-5):
    """Returns (y, new state): statistics over real steps only."""
    m = mask[..., None]
    if train:
        n = m.sum()
        mean = (x * m).sum((0, 1)) / n
        var = (((x - mean) ** 2) * m).sum((0, 1)) / n
        state = dict(state)
        rm, rv = prefix + ".running_mean", prefix + ".running_var"
        state[rm] = (1 - momentum) * state[rm] + momentum * mean
        state[rv] = (1 - momentum) * state[rv] + \
            momentum * var * n / jnp.maximum(n - 1, 1)
        state = jax.lax.stop_gradient(state)
    else:
        mean = state[prefix + ".running_mean"]
        var = state[prefix + ".running_var"]
    y = (x - mean) * p[prefix + ".scale"] / jnp.sqrt(var + eps) \
        + p[prefix + ".bias"]
    return y * m, state


def layer_norm(p, prefix, x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * p[prefix + ".scale"] \
        + p[prefix + ".bias"]


def make_model(spec, lruc_dropout=True):
    """apply(params, state, inputs, train, dropout_key) ->
    (loss, (predictions, new state)), for jax.grad(..., has_aux=True).
    lruc_dropout: lruc's dropout masks (philox.py, the same numbers, drawn
    by numpy when traced: constants of a jit); False: JAX's own
    (jax.random.bernoulli), as a benchmark times it."""
    layers = list(spec.param_layers())
    sites_per_tower = sum(1 for _, layers_ in spec.blocks for l in layers_
                          if l.kind == "dropout")

    def tower(p, state, seq, lengths, train, key, tower_index):
        mask = prefix_mask(lengths, seq.shape[1])
        enc = spec.encoder.args
        x = p["encoder.weight"][seq] if enc["kind"] == "embedding" \
            else linear(p, "encoder", seq)
        site = tower_index * sites_per_tower
        current = None
        for index, layer, prefix in layers:
            if index != current:  # a new block: close the last, open this
                if current is not None:
                    x = x + y
                current = index
                norm = spec.blocks[index][0].args.get("norm", "none")
                if norm == "batch":
                    y, state = batch_norm(p, state, f"blocks.{index}.norm", x,
                                          mask, train)
                elif norm == "layer":
                    y = layer_norm(p, f"blocks.{index}.norm", x)
                else:
                    y = x
            a = layer.args
            if layer.kind == "lru":
                y = lru(p, prefix, y, mask, a)
            elif layer.kind == "glru":
                y = glru(p, prefix, y, mask, a)
            elif layer.kind == "linear":
                y = linear(p, prefix, y, a["bias"])
            elif layer.kind == "glu":
                gate = jax.nn.sigmoid(linear(p, prefix + ".gate", y))
                y = (linear(p, prefix + ".value", y)
                     if a["variant"] == "full" else y) * gate
            elif layer.kind == "mlp":
                y = linear(p, prefix + ".fc2",
                           activation(a["activation"],
                                      linear(p, prefix + ".fc1", y)))
            elif layer.kind == "dropout":
                if train and a["rate"] > 0 and lruc_dropout:
                    keep = keep_mask(y.shape, key, site, a["rate"])
                    y = y * keep / (1 - a["rate"])
                elif train and a["rate"] > 0:
                    rng = jax.random.fold_in(
                        jax.random.PRNGKey(int(key[0])), int(key[1]) * 1024 + site)
                    keep = jax.random.bernoulli(rng, 1 - a["rate"], y.shape)
                    y = jnp.where(keep, y / (1 - a["rate"]), 0)
                site += 1
            else:
                y = activation(layer.kind, y, a.get("approximate", False))
        if current is not None:
            x = x + y
        if spec.pool == "mean":
            x = (x * mask[..., None]).sum(1) / lengths[:, None]
        elif spec.pool == "last":
            x = x[jnp.arange(x.shape[0]), lengths - 1]
        return x, state, mask

    def apply(p, state, inputs, train=False, dropout_key=(0, 0)):
        head = spec.head.args
        if spec.input.args["kind"] == "token_pairs":
            a, state, _ = tower(p, state, inputs["tokens_a"],
                                inputs["lengths_a"], train, dropout_key, 0)
            b, state, _ = tower(p, state, inputs["tokens_b"],
                                inputs["lengths_b"], train, dropout_key, 1)
            combined = jnp.concatenate([a, b, a * b, a - b], 1)
            logits = linear(p, "head.fc2", activation(
                head["activation"], linear(p, "head.fc1", combined)))
            mask = None
        else:
            seq = inputs["tokens"] if "tokens" in inputs else inputs["features"]
            features, state, mask = tower(p, state, seq, inputs["lengths"],
                                          train, dropout_key, 0)
            logits = linear(p, "head", features)
        per_step = spec.pool == "none"
        if spec.loss == "cross_entropy":
            labels = inputs["labels"]
            logp = jax.nn.log_softmax(logits, -1)
            nll = -jnp.take_along_axis(logp, jnp.maximum(labels, 0)[..., None],
                                       -1)[..., 0]
            # Class weights w and label smoothing s, as PyTorch's
            # cross_entropy: a row (1 - s) w[label] nll - s / K sum_k w[k]
            # log p[k], the mean divided by the sum of the labels' weights.
            s = spec.label_smoothing
            classes = logp.shape[-1]
            w = jnp.ones((classes,), nll.dtype)
            if spec.class_weights is not None:
                w = jnp.asarray(spec.class_weights, nll.dtype)
            weight = w[jnp.maximum(labels, 0)]
            rows = (1 - s) * weight * nll - s / classes * (logp * w).sum(-1)
            if per_step:  # a negative label: a step not scored
                scored = mask * (labels >= 0)
                floor = 1 if spec.class_weights is None else 1e-30
                loss = (rows * scored).sum() / jnp.maximum(
                    (weight * scored).sum(), floor)
            else:
                loss = rows.sum() / weight.sum()
        else:  # a NaN target: a value not scored
            targets = inputs["targets"]
            scored = (~jnp.isnan(targets)).astype(logits.dtype)
            if per_step:
                scored = scored * mask[..., None]
            d = logits - jnp.nan_to_num(targets, nan=0.0)
            if spec.loss == "l1":
                err = jnp.abs(d)
            elif spec.loss == "huber":  # PyTorch's HuberLoss
                delta = spec.huber_delta
                a = jnp.abs(d)
                err = jnp.where(a < delta, 0.5 * d ** 2,
                                delta * (a - 0.5 * delta))
            else:
                err = d ** 2
            loss = (err * scored).sum() / jnp.maximum(scored.sum(), 1)
        return loss, (logits, state)

    return apply


def load_checkpoint(path, names):
    """{name: array} of `names` from an lruc safetensors checkpoint."""
    from safetensors.numpy import load_file
    tensors = load_file(str(path))
    missing = [n for n in names if n not in tensors]
    if missing:
        raise KeyError(f"{path}: no tensor for {', '.join(missing)}")
    return {n: jnp.asarray(tensors[n]) for n in names}


def adamw_step(params, grads, adam, lr, step, train):
    """lruc's AdamW (docs/autodiff.md); adam = (m, v) dictionaries."""
    clip = train.get("clip")
    if clip:
        norm = jnp.sqrt(sum((g.astype(jnp.float32) ** 2).sum()
                            for g in grads.values()))
        grads = {k: g * (clip / jnp.maximum(norm, clip))
                 for k, g in grads.items()}
    b1, b2, eps = train["beta1"], train["beta2"], train["eps"]
    m, v = adam
    new_p, new_m, new_v = {}, {}, {}
    for k, p in params.items():
        recurrent = k.split(".")[-1] in RECURRENT
        lr_g = lr * (train["recurrent_lr_factor"] if recurrent else 1.0)
        wd_g = 0.0 if recurrent else train["weight_decay"]
        new_m[k] = b1 * m[k] + (1 - b1) * grads[k]
        new_v[k] = b2 * v[k] + (1 - b2) * grads[k] ** 2
        m_hat = new_m[k] / (1 - b1 ** step)
        v_hat = new_v[k] / (1 - b2 ** step)
        new_p[k] = p - lr_g * (m_hat / (jnp.sqrt(v_hat) + eps) + wd_g * p)
    return new_p, (new_m, new_v)
