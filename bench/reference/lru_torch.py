"""The LRU models of lruc, written plainly in PyTorch.

The architecture of DESIGN.md §4 as a PyTorch user would write it: an
nn.Module per layer whose parameter names are lruc's (`blocks.0.lru.nu_log`),
so `model.load_state_dict` takes an lruc safetensors checkpoint as it is.
BatchNorm and pooling ignore padded steps, the reverse scan starts at each
sequence's real end, and dropout draws lruc's masks (philox.py), so the same
weights and inputs give the same loss, predictions and gradients.

The recurrence `x_t = λ_t x_{t-1} + b_t` runs as a log-depth parallel scan
(Hillis-Steele doubling) over complex64 tensors.
"""

import math

import torch
from torch import nn
import torch.nn.functional as F

from philox import keep_mask

RECURRENT = ("nu_log", "theta_log", "gamma_log", "B_re", "B_im", "U")


def scan(lam, b):
    """x_t = lam_t * x_{t-1} + b_t along dim 1 (x_{-1} = 0), in log2(L)
    rounds; lam is [N] (constant) or shaped like b ([B, L, N])."""
    a = lam.expand_as(b)
    x = b
    d, steps = 1, b.shape[1]
    while d < steps:
        x = torch.cat([x[:, :d], x[:, d:] + a[:, d:] * x[:, :-d]], 1)
        a = torch.cat([a[:, :d], a[:, d:] * a[:, :-d]], 1)
        d *= 2
    return x


def fft_scan(lam, b):
    """The same for a constant lam: a causal convolution of b with lam^t,
    through FFTs of length 2L (O(L log L), no per-round copies)."""
    steps = b.shape[1]
    powers = lam[None, :] ** torch.arange(steps, dtype=torch.float32)[:, None]
    n = 2 * steps
    x = torch.fft.ifft(torch.fft.fft(b, n, dim=1) *
                       torch.fft.fft(powers, n, dim=0)[None], dim=1)
    return x[:, :steps]


def prefix_mask(lengths, steps):
    """[B, L] float: 1 at real steps."""
    return (torch.arange(steps)[None, :] < lengths[:, None]).float()


class Ctx:
    """What the layers of one tower call see: padding, mode, dropout."""

    def __init__(self, mask, train, dropout_key, first_site, fft=False,
                 lruc_dropout=True):
        self.mask, self.train, self.fft = mask, train, fft
        self.dropout_key, self.site = dropout_key, first_site
        self.lruc_dropout = lruc_dropout


def complex_input(u, B_re, B_im):
    # float(): under CPU autocast the products are bfloat16, which complex
    # tensors do not take (a no-op in fp32).
    return torch.complex((u @ B_re.T).float(), (u @ B_im.T).float())


def readout(x, C_re, C_im):
    return x.real @ C_re.T - x.imag @ C_im.T


def add_recurrent_params(module, h, n):
    """nu_log, theta_log, B, C and D (their values come from a checkpoint)."""
    for name, shape in (("nu_log", [n]), ("theta_log", [n]), ("B_re", [n, h]),
                        ("B_im", [n, h]), ("C_re", [h, n]), ("C_im", [h, n]),
                        ("D", [h])):
        setattr(module, name, nn.Parameter(torch.zeros(shape)))


class LRU(nn.Module):
    def __init__(self, h, n, bidirectional, gamma_norm):
        super().__init__()
        add_recurrent_params(self, h, n)
        self.gamma_log = nn.Parameter(torch.zeros(n)) if gamma_norm else None
        if bidirectional:
            self.C_rev_re, self.C_rev_im = (nn.Parameter(torch.zeros(h, n))
                                            for _ in range(2))
        self.bidirectional = bidirectional

    def discretised(self):
        """λ and the γ-scaled B."""
        lam = torch.exp(torch.complex(-torch.exp(self.nu_log),
                                      torch.exp(self.theta_log)))
        B_re, B_im = self.B_re, self.B_im
        if self.gamma_log is not None:
            gamma = torch.exp(self.gamma_log)[:, None]
            B_re, B_im = B_re * gamma, B_im * gamma
        return lam, B_re, B_im

    def forward(self, u, ctx):
        lam, B_re, B_im = self.discretised()
        b = complex_input(u, B_re, B_im) * ctx.mask[..., None]
        x = fft_scan(lam, b) if ctx.fft else scan(lam, b)
        y = readout(x, self.C_re, self.C_im) + self.D * u
        if self.bidirectional:
            x_rev = (fft_scan(lam, b.flip(1)) if ctx.fft
                     else scan(lam, b.flip(1))).flip(1)
            y = y + readout(x_rev, self.C_rev_re, self.C_rev_im)
        return y * ctx.mask[..., None]

    def step(self, u, state):
        """One step of a causal LRU: u [B, H], state [B, N] complex."""
        lam, B_re, B_im = self.discretised()
        state = lam * state + complex_input(u, B_re, B_im)
        return readout(state, self.C_re, self.C_im) + self.D * u, state


class GLRU(nn.Module):
    """The generalised LRU: decay exp(U u_t - exp(nu_log) + i exp(theta_log))."""

    def __init__(self, h, n, form):
        super().__init__()
        add_recurrent_params(self, h, n)
        self.U = nn.Parameter(torch.zeros(n, h))
        self.form = form

    def forward(self, u, ctx):
        g = u @ self.U.T
        if self.form == "plain":
            a = g - torch.exp(self.nu_log)
        else:
            a = -F.softplus(torch.exp(self.nu_log) - g)
        lam = torch.exp(torch.complex(a, torch.exp(self.theta_log).expand_as(a)))
        b = complex_input(u, self.B_re, self.B_im) * ctx.mask[..., None]
        x = scan(lam, b)
        if self.form == "normalized":
            ones = ctx.mask[..., None].expand_as(a)
            norm = scan(torch.exp(a), ones)
            x = x / torch.where(ones > 0, norm, torch.ones_like(norm))
        y = readout(x, self.C_re, self.C_im) + self.D * u
        return y * ctx.mask[..., None]


class GLU(nn.Module):
    def __init__(self, h, full):
        super().__init__()
        self.gate = nn.Linear(h, h)
        self.value = nn.Linear(h, h) if full else None

    def forward(self, x, ctx):
        gate = torch.sigmoid(self.gate(x))
        return (self.value(x) if self.value is not None else x) * gate


def activation(name, approximate=False):
    if name == "gelu":
        return lambda x: F.gelu(x, approximate="tanh" if approximate else "none")
    return {"relu": torch.relu, "tanh": torch.tanh}[name]


class MLP(nn.Module):
    def __init__(self, h, hidden, act):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(h, hidden), nn.Linear(hidden, h)
        self.act = activation(act)

    def forward(self, x, ctx):
        return self.fc2(self.act(self.fc1(x)))


class Dropout(nn.Module):
    def __init__(self, rate):
        super().__init__()
        self.rate = rate

    def forward(self, x, ctx):
        site = ctx.site
        ctx.site += 1
        if not ctx.train or self.rate == 0:
            return x
        if not ctx.lruc_dropout:  # PyTorch's own masks (for timing)
            return F.dropout(x, self.rate, training=True)
        keep = keep_mask(tuple(x.shape), ctx.dropout_key, site, self.rate)
        return x * torch.from_numpy(keep).to(x.device) / (1 - self.rate)


class Activation(nn.Module):
    def __init__(self, name, approximate=False):
        super().__init__()
        self.fn = activation(name, approximate)

    def forward(self, x, ctx):
        return self.fn(x)


class Linear(nn.Linear):
    def forward(self, x, ctx):
        return super().forward(x)


class MaskedBatchNorm(nn.Module):
    """BatchNorm over (batch, steps) that counts real steps only."""

    def __init__(self, h, momentum=0.1, eps=1e-5):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(h))
        self.bias = nn.Parameter(torch.zeros(h))
        self.register_buffer("running_mean", torch.zeros(h))
        self.register_buffer("running_var", torch.ones(h))
        self.momentum, self.eps = momentum, eps

    def forward(self, x, ctx):
        m = ctx.mask[..., None]
        if ctx.train:
            n = m.sum()
            mean = (x * m).sum((0, 1)) / n
            var = (((x - mean) ** 2) * m).sum((0, 1)) / n
            with torch.no_grad():
                self.running_mean.mul_(1 - self.momentum).add_(
                    self.momentum * mean)
                self.running_var.mul_(1 - self.momentum).add_(
                    self.momentum * var * n / torch.clamp(n - 1, min=1))
        else:
            mean, var = self.running_mean, self.running_var
        y = (x - mean) * self.scale / torch.sqrt(var + self.eps) + self.bias
        return y * m


class LayerNorm(nn.Module):
    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(h))
        self.bias = nn.Parameter(torch.zeros(h))
        self.eps = eps

    def forward(self, x, ctx):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.scale + self.bias


class Block(nn.Module):
    """x + layers(norm(x)); parameterised layers are attributes named by
    kind (a ModuleList when the block has several of one kind)."""

    def __init__(self, block, layers, prefixes, h):
        super().__init__()
        norm = block.args.get("norm", "none")
        self.norm = (MaskedBatchNorm(h) if norm == "batch" else
                     LayerNorm(h) if norm == "layer" else None)
        self.layers = []
        named = {}
        width = h
        for layer, prefix in zip(layers, prefixes):
            a = layer.args
            if layer.kind == "lru":
                module = LRU(width, a["state"], a["bidirectional"],
                             a["gamma_norm"])
            elif layer.kind == "glru":
                module = GLRU(width, a["state"], a["form"])
            elif layer.kind == "linear":
                module = Linear(width, a["width"], bias=a["bias"])
                width = a["width"]
            elif layer.kind == "glu":
                module = GLU(width, a["variant"] == "full")
            elif layer.kind == "mlp":
                module = MLP(width, a["hidden"], a["activation"])
            elif layer.kind == "dropout":
                module = Dropout(a["rate"])
            else:
                module = Activation(layer.kind, a.get("approximate", False))
            self.layers.append(module)
            if prefix is not None:
                named.setdefault(prefix.split(".")[2], []).append(module)
        for kind, modules in named.items():
            setattr(self, kind,
                    modules[0] if len(modules) == 1 else nn.ModuleList(modules))

    def forward(self, x, ctx):
        y = self.norm(x, ctx) if self.norm is not None else x
        for layer in self.layers:
            y = layer(y, ctx)
        return x + y

    def step(self, x, ctx, states):
        """One step of inference ([B, H]); LRU states in `states`, in order."""
        y = self.norm(x[:, None], ctx)[:, 0] if self.norm is not None else x
        for layer in self.layers:
            if isinstance(layer, LRU):
                y, states[layer] = layer.step(y, states[layer])
            else:
                y = layer(y, ctx)
        return x + y


class Model(nn.Module):
    def __init__(self, spec, fft=False, lruc_dropout=True):
        """fft: the LRU's scans as FFT convolutions instead of the parallel
        scan (the faster one depends on the model and machine).
        lruc_dropout: lruc's dropout masks (philox.py, the same numbers);
        False: PyTorch's own (F.dropout), as a benchmark times it."""
        super().__init__()
        self.spec, self.fft, self.lruc_dropout = spec, fft, lruc_dropout
        inp, enc = spec.input, spec.encoder
        h = enc.args["width"]
        if enc.args["kind"] == "embedding":
            self.encoder = nn.Embedding(inp.args["vocab"], h)
        else:
            self.encoder = nn.Linear(inp.args["channels"], h)
        prefixes = {}
        for index, layer, prefix in spec.param_layers():
            prefixes.setdefault(index, []).append(prefix)
        self.blocks = nn.ModuleList(
            [Block(block, layers, prefixes[i], h)
             for i, (block, layers) in enumerate(spec.blocks)])
        self.sites_per_tower = sum(
            1 for _, layers in spec.blocks for l in layers
            if l.kind == "dropout")
        head = spec.head.args
        if head["kind"] == "retrieval":
            self.head = nn.Module()
            self.head.fc1 = nn.Linear(4 * h, head["hidden"])
            self.head.fc2 = nn.Linear(head["hidden"], head["classes"])
            self.head_act = activation(head["activation"])
        else:
            self.head = nn.Linear(h, head["classes"])

    def tower(self, seq, lengths, train, dropout_key, tower_index):
        mask = prefix_mask(lengths, seq.shape[1])
        ctx = Ctx(mask, train, dropout_key, tower_index * self.sites_per_tower,
                  self.fft, self.lruc_dropout)
        x = self.encoder(seq)
        for block in self.blocks:
            x = block(x, ctx)
        if self.spec.pool == "mean":
            return (x * mask[..., None]).sum(1) / lengths[:, None].float()
        if self.spec.pool == "last":
            return x[torch.arange(x.shape[0]), lengths - 1]
        return x

    def forward(self, inputs, train=False, dropout_key=(0, 0)):
        """The loss and the predictions, as lruc's forward (train=False) or
        forward_train computes them; inputs are named as in the manifest."""
        t = {k: torch.as_tensor(v) for k, v in inputs.items()}
        if self.spec.input.args["kind"] == "token_pairs":
            a = self.tower(t["tokens_a"].long(), t["lengths_a"].long(), train,
                           dropout_key, 0)
            b = self.tower(t["tokens_b"].long(), t["lengths_b"].long(), train,
                           dropout_key, 1)
            combined = torch.cat([a, b, a * b, a - b], 1)
            logits = self.head.fc2(self.head_act(self.head.fc1(combined)))
            mask = None
        else:
            seq = t.get("tokens", t.get("features"))
            seq = seq.long() if "tokens" in t else seq.float()
            lengths = t["lengths"].long()
            logits = self.head(self.tower(seq, lengths, train, dropout_key, 0))
            mask = prefix_mask(lengths, seq.shape[1])
        per_step = self.spec.pool == "none"
        if self.spec.loss == "cross_entropy":
            labels = t["labels"].long()
            smoothing = self.spec.label_smoothing
            weight = None
            if self.spec.class_weights is not None:
                weight = torch.tensor(self.spec.class_weights,
                                      dtype=logits.dtype)
            if per_step:  # a negative label: a step not scored
                scored = mask * (labels >= 0)
                losses = F.cross_entropy(logits.transpose(1, 2),
                                         labels.clamp(min=0), weight=weight,
                                         reduction="none",
                                         label_smoothing=smoothing)
                if weight is None:
                    divisor = scored.sum().clamp(min=1)
                else:  # reduction="none" weighs each step already
                    divisor = (weight[labels.clamp(min=0)] * scored).sum()
                loss = (losses * scored).sum() / divisor
            else:
                loss = F.cross_entropy(logits, labels, weight=weight,
                                       label_smoothing=smoothing)
        else:  # a NaN target: a value not scored
            targets = t["targets"].float()
            scored = (~torch.isnan(targets)).float()
            if per_step:
                scored = scored * mask[..., None]
            given = targets.nan_to_num(nan=0.0)
            if self.spec.loss == "l1":
                err = F.l1_loss(logits, given, reduction="none")
            elif self.spec.loss == "huber":
                err = F.huber_loss(logits, given, reduction="none",
                                   delta=self.spec.huber_delta)
            else:
                err = F.mse_loss(logits, given, reduction="none")
            loss = (err * scored).sum() / scored.sum().clamp(min=1)
        return loss, logits


class StepState:
    """What a causal model carries from token to token: each LRU's complex
    state and the running sum of mean pooling."""

    def __init__(self, model, batch):
        n = lambda lru: lru.nu_log.shape[0]
        self.lru = {layer: torch.zeros(batch, n(layer), dtype=torch.complex64)
                    for block in model.blocks for layer in block.layers
                    if isinstance(layer, LRU)}
        self.sum, self.count = 0.0, 0


def step(model, tokens, carry):
    """Predictions after one more step of every sequence (inference);
    tokens/features of this step are [B] / [B, C]. Causal models only."""
    if model.spec.input.args["kind"] == "token_pairs" or any(
            isinstance(l, GLRU) or (isinstance(l, LRU) and l.bidirectional)
            for b in model.blocks for l in b.layers) or \
            model.spec.pool != "mean":
        raise ValueError("step mode needs a causal model with mean pooling")
    ctx = Ctx(torch.ones(tokens.shape[0], 1), False, (0, 0), 0)
    x = model.encoder(tokens)
    for block in model.blocks:
        x = block.step(x, ctx, carry.lru)
    carry.sum, carry.count = carry.sum + x, carry.count + 1
    return model.head(carry.sum / carry.count)


def load_checkpoint(model, path):
    """Parameters and running statistics from an lruc safetensors file, by
    name (the optimizer moments in it are not the model's)."""
    from safetensors.torch import load_file
    tensors = load_file(str(path))
    wanted = model.state_dict().keys()
    missing = [k for k in wanted if k not in tensors]
    if missing:
        raise KeyError(f"{path}: no tensor for {', '.join(missing)}")
    model.load_state_dict({k: tensors[k] for k in wanted}, strict=True)


def gradients(model):
    """Each parameter's gradient by name. A parameter the loss does not
    reach (a one-step sequence never multiplies by lambda) has no .grad in
    PyTorch; lruc's gradient is 0, and its update still decays the moments
    and the weight."""
    return {k: p.grad if p.grad is not None else torch.zeros_like(p)
            for k, p in model.named_parameters()}


def adamw_step(model, lr, step, train):
    """lruc's AdamW (docs/autodiff.md): global-norm clip, then per group
    lr_g, wd_g; moments in model._adam (created on first use)."""
    params = dict(model.named_parameters())
    grads = gradients(model)
    clip = train.get("clip")
    if clip:
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values()))
        scale = clip / max(float(norm), clip)
        grads = {k: g * scale for k, g in grads.items()}
    b1, b2, eps = train["beta1"], train["beta2"], train["eps"]
    if not hasattr(model, "_adam"):
        model._adam = {k: (torch.zeros_like(p), torch.zeros_like(p))
                       for k, p in params.items()}
    with torch.no_grad():
        for k, p in params.items():
            recurrent = k.split(".")[-1] in RECURRENT
            lr_g = lr * (train["recurrent_lr_factor"] if recurrent else 1.0)
            wd_g = 0.0 if recurrent else train["weight_decay"]
            m, v = model._adam[k]
            m.mul_(b1).add_((1 - b1) * grads[k])
            v.mul_(b2).add_((1 - b2) * grads[k] ** 2)
            m_hat = m / (1 - b1 ** step)
            v_hat = v / (1 - b2 ** step)
            p.sub_(lr_g * (m_hat / (torch.sqrt(v_hat) + eps) + wd_g * p))
