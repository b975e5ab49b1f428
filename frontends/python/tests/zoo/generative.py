"""Generative models of the zoo: VAE, GAN steps, GPT sampling with a KV cache, neural ODE."""
import math

import oar as paddle
import oar.nn as nn
import oar.nn.functional as F

from . import floats, ints, register


# ---- VAE (reparameterization with a given noise tensor) ----------------------

class VAE(nn.Layer):
    def __init__(self, input_dim=32, hidden_dim=16, latent_dim=4):
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_dim)
        self.fc_mu = nn.Linear(hidden_dim, latent_dim)
        self.fc_logvar = nn.Linear(hidden_dim, latent_dim)
        self.fc3 = nn.Linear(latent_dim, hidden_dim)
        self.fc4 = nn.Linear(hidden_dim, input_dim)

    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc_mu(h), self.fc_logvar(h)

    def reparameterize(self, mu, logvar, eps):
        std = paddle.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        return F.sigmoid(self.fc4(F.relu(self.fc3(z))))

    def forward(self, x, eps):
        mu, logvar = self.encode(x)
        z = self.reparameterize(mu, logvar, eps)
        recon = self.decode(z)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * paddle.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return recon, (bce + kld) / x.shape[0]


register("vae", lambda: (F.sigmoid(floats(2, 32, seed=10)), floats(2, 4, seed=11)),
         notes="the noise eps is an input, so the run is deterministic")(lambda: VAE())


# ---- GAN: a generator step and a discriminator step --------------------------

class Generator(nn.Layer):
    def __init__(self, latent_dim=8, img_shape=(1, 8, 8)):
        super().__init__()
        self.img_shape = img_shape

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1D(out_feat, momentum=0.8))
            layers.append(nn.LeakyReLU(0.2))
            return layers

        self.model = nn.Sequential(
            *block(latent_dim, 16, normalize=False),
            *block(16, 32),
            nn.Linear(32, int(math.prod(img_shape))),
            nn.Tanh())

    def forward(self, z):
        img = self.model(z)
        img = img.reshape([img.shape[0], *self.img_shape])
        return img


class Discriminator(nn.Layer):
    def __init__(self, img_shape=(1, 8, 8)):
        super().__init__()
        self.model = nn.Sequential(
            nn.Linear(int(math.prod(img_shape)), 32),
            nn.LeakyReLU(0.2),
            nn.Linear(32, 16),
            nn.LeakyReLU(0.2),
            nn.Linear(16, 1),
            nn.Sigmoid())

    def forward(self, img):
        img_flat = img.reshape([img.shape[0], -1])
        return self.model(img_flat)


class GANGeneratorStep(nn.Layer):
    def __init__(self):
        super().__init__()
        self.generator = Generator()
        self.discriminator = Discriminator()
        self.adversarial_loss = nn.BCELoss()

    def forward(self, z):
        gen_imgs = self.generator(z)
        valid = paddle.ones([z.shape[0], 1])
        g_loss = self.adversarial_loss(self.discriminator(gen_imgs), valid)
        return g_loss


class GANDiscriminatorStep(GANGeneratorStep):
    def forward(self, real_imgs, z):
        valid = paddle.ones([real_imgs.shape[0], 1])
        fake = paddle.zeros([real_imgs.shape[0], 1])
        gen_imgs = self.generator(z).detach()
        real_loss = self.adversarial_loss(self.discriminator(real_imgs), valid)
        fake_loss = self.adversarial_loss(self.discriminator(gen_imgs), fake)
        d_loss = (real_loss + fake_loss) / 2
        return d_loss


register("gan_generator_step", lambda: (floats(4, 8, seed=12),),
         notes="train mode (batch norm in the generator)")(lambda: GANGeneratorStep())
register("gan_discriminator_step", lambda: (paddle.tanh(floats(4, 1, 8, 8, seed=13)), floats(4, 8, seed=12)),
         notes="the generated images are detached")(lambda: GANDiscriminatorStep())


# ---- GPT: greedy sampling loop with a KV cache -------------------------------

class CausalSelfAttention(nn.Layer):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x, kv_cache=None):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(3, axis=2)
        k = k.reshape([B, T, self.n_head, C // self.n_head]).transpose([0, 2, 1, 3])
        q = q.reshape([B, T, self.n_head, C // self.n_head]).transpose([0, 2, 1, 3])
        v = v.reshape([B, T, self.n_head, C // self.n_head]).transpose([0, 2, 1, 3])
        if kv_cache is not None:
            past_k, past_v = kv_cache
            k = paddle.concat([past_k, k], axis=2)
            v = paddle.concat([past_v, v], axis=2)
        new_cache = (k, v)
        att = (q @ k.transpose([0, 1, 3, 2])) * (1.0 / math.sqrt(k.shape[-1]))
        if kv_cache is None:
            mask = paddle.tril(paddle.ones([T, T]))
            att = paddle.where(mask == 0, paddle.full_like(att, float("-inf")), att)
        att = F.softmax(att, axis=-1)
        y = att @ v
        y = y.transpose([0, 2, 1, 3]).reshape([B, T, C])
        return self.c_proj(y), new_cache


class GPTBlock(nn.Layer):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate=True),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x, kv_cache=None):
        a, cache = self.attn(self.ln_1(x), kv_cache)
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, cache


class GPT(nn.Layer):
    def __init__(self, vocab_size=20, block_size=16, n_layer=2, n_head=2, n_embd=16):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.LayerList([GPTBlock(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias_attr=False)

    def step(self, idx, caches, start_pos):
        T = idx.shape[1]
        pos = paddle.arange(start_pos, start_pos + T, dtype="int64").unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        new_caches = []
        for block, cache in zip(self.h, caches):
            x, cache = block(x, cache)
            new_caches.append(cache)
        return self.lm_head(self.ln_f(x)), new_caches

    @paddle.no_grad()
    def generate(self, idx, max_new_tokens, top_k=3):
        caches = [None] * len(self.h)
        logits, caches = self.step(idx, caches, 0)
        pos = idx.shape[1]
        scores = []
        for _ in range(max_new_tokens):
            logits = logits[:, -1, :]
            v, _ = paddle.topk(logits, top_k)
            logits = paddle.where(logits < v[:, [-1]], paddle.full_like(logits, float("-inf")), logits)
            probs = F.softmax(logits, axis=-1)
            idx_next = paddle.argmax(probs, axis=-1, keepdim=True)  # greedy: deterministic
            scores.append(paddle.max(probs, axis=-1))
            idx = paddle.concat((idx, idx_next), axis=1)
            logits, caches = self.step(idx_next, caches, pos)
            pos += 1
        return idx, paddle.stack(scores, axis=1)

    def forward(self, idx):
        return self.generate(idx, max_new_tokens=4)


register("gpt_kv_cache_generate", lambda: (ints(0, 20, 2, 4, seed=14),), trainable=False,
         notes="@paddle.no_grad() generate; a Python loop of 4 steps; the caches are lists of tensors")(
    lambda: GPT())


class GPTLM(GPT):
    """The same GPT as a training forward (no decorator, no cache)."""

    def forward(self, idx, targets):
        logits, _ = self.step(idx, [None] * len(self.h), 0)
        loss = F.cross_entropy(logits.reshape([-1, logits.shape[-1]]), targets.reshape([-1]))
        return logits, loss


register("gpt_lm_loss", lambda: (ints(0, 20, 2, 8, seed=15), ints(0, 20, 2, 8, seed=16)))(lambda: GPTLM())


# ---- neural ODE with an adaptive step size -----------------------------------

class ODEFunc(nn.Layer):
    def __init__(self, dim=4, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))

    def forward(self, t, y):
        return self.net(y)


class NeuralODE(nn.Layer):
    """Heun's method with an embedded Euler error estimate: a step is halved
    while its error is above tol, and the integration runs to t1."""

    def __init__(self, t1=1.0, tol=1e-2):
        super().__init__()
        self.func = ODEFunc()
        self.t1 = t1
        self.tol = tol

    def forward(self, y0):
        t = paddle.zeros([1])
        h = paddle.full([1], 0.5)
        y = y0
        while t < self.t1:
            h = paddle.minimum(h, self.t1 - t)
            k1 = self.func(t, y)
            k2 = self.func(t + h, y + h * k1)
            error = (0.5 * h * (k2 - k1)).abs().max()
            while error > self.tol:
                h = h / 2
                k2 = self.func(t + h, y + h * k1)
                error = (0.5 * h * (k2 - k1)).abs().max()
            y = y + 0.5 * h * (k1 + k2)
            t = t + h
            h = h * 1.5
        return y


register("neural_ode_adaptive", lambda: (floats(2, 4, seed=17),),
         notes="nested while loops on tensors (outer to t1, inner while error > tol)")(lambda: NeuralODE())


class GPTGreedy(GPT):
    """Greedy decoding with the KV cache, written without top-k filtering."""

    @paddle.no_grad()
    def forward(self, idx):
        caches = [None] * len(self.h)
        logits, caches = self.step(idx, caches, 0)
        pos = idx.shape[1]
        for _ in range(4):
            idx_next = paddle.argmax(logits[:, -1, :], axis=-1).unsqueeze(-1)
            idx = paddle.concat([idx, idx_next], axis=1)
            logits, caches = self.step(idx_next, caches, pos)
            pos += 1
        return idx


register("gpt_kv_cache_greedy", lambda: (ints(0, 20, 2, 4, seed=14),), trainable=False,
         notes="argmax decoding, 4 steps, KV caches concatenated each step; @paddle.no_grad()")(
    lambda: GPTGreedy())


class GPTGreedyPlain(GPT):
    """GPTGreedy's forward without the @paddle.no_grad() decorator."""

    def forward(self, idx):
        caches = [None] * len(self.h)
        logits, caches = self.step(idx, caches, 0)
        pos = idx.shape[1]
        for _ in range(4):
            idx_next = paddle.argmax(logits[:, -1, :], axis=-1).unsqueeze(-1)
            idx = paddle.concat([idx, idx_next], axis=1)
            logits, caches = self.step(idx_next, caches, pos)
            pos += 1
        return idx


register("gpt_kv_cache_greedy_plain", lambda: (ints(0, 20, 2, 4, seed=14),), trainable=False,
         notes="gpt_kv_cache_greedy without the decorator")(lambda: GPTGreedyPlain())


# ---- top-p (nucleus) filtering of next-token logits --------------------------

class TopPFilter(nn.Layer):
    """The logits filter of a sampling loop (sort, cumsum, scatter back), then the argmax."""

    def __init__(self, vocab_size=20, n_embd=16, top_p=0.8):
        super().__init__()
        self.top_p = top_p
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        logits = self.lm_head(self.wte(idx).mean(axis=1))
        sorted_logits = paddle.sort(logits, descending=True, axis=-1)
        sorted_indices = paddle.argsort(logits, descending=True, axis=-1)
        cumulative_probs = paddle.cumsum(F.softmax(sorted_logits, axis=-1), axis=-1)
        sorted_indices_to_remove = cumulative_probs > self.top_p
        # keep the first token above the threshold
        sorted_indices_to_remove = paddle.concat(
            [paddle.zeros_like(sorted_indices_to_remove[:, :1]), sorted_indices_to_remove[:, :-1]], axis=-1)
        indices_to_remove = paddle.put_along_axis(paddle.zeros_like(sorted_indices_to_remove), sorted_indices,
                                                  sorted_indices_to_remove, axis=-1)
        filtered = paddle.where(indices_to_remove, paddle.full_like(logits, -1e9), logits)
        return F.softmax(filtered, axis=-1), paddle.argmax(filtered, axis=-1)


register("top_p_filter", lambda: (ints(0, 20, 2, 4, seed=45),), notes="sort, argsort, cumsum, put_along_axis")(
    lambda: TopPFilter())
