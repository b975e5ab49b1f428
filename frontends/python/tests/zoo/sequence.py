"""Sequence models of the zoo: RNN language models, transformers, seq2seq, TCN."""
import numpy as np

import oar as paddle
import oar.nn as nn
import oar.nn.functional as F

from . import floats, ints, register

VOCAB = 20
BOS, EOS = 1, 2


def token_ids(batch=2, length=8, seed=3):
    return lambda: (ints(3, VOCAB, batch, length, seed=seed),)


# ---- LSTM / GRU / SimpleRNN language models ----------------------------------

class RNNLM(nn.Layer):
    def __init__(self, vocab_size=VOCAB, hidden_size=16, num_layers=2, cell="lstm", init_scale=0.1):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.embedder = nn.Embedding(vocab_size, hidden_size,
                                     weight_attr=paddle.ParamAttr(
                                         initializer=nn.initializer.Uniform(low=-init_scale, high=init_scale)))
        rnn_cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.SimpleRNN}[cell]
        self.rnn = rnn_cls(input_size=hidden_size, hidden_size=hidden_size, num_layers=num_layers)
        self.fc = nn.Linear(hidden_size, vocab_size)
        self.dropout = nn.Dropout(p=0.0)

    def forward(self, inputs):
        x = self.embedder(inputs)
        x = self.dropout(x)
        y, states = self.rnn(x)
        y = self.dropout(y)
        logits = self.fc(y)
        return logits


register("lstm_lm", token_ids())(lambda: RNNLM(cell="lstm"))
register("gru_lm", token_ids())(lambda: RNNLM(cell="gru"))


class BiRNNClassifier(nn.Layer):
    """SimpleRNN, bidirectional, with the lengths of the padded sequences."""

    def __init__(self, vocab_size=VOCAB, emb_dim=8, hidden_size=8, num_classes=3):
        super().__init__()
        self.embedder = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.rnn = nn.SimpleRNN(emb_dim, hidden_size, direction="bidirect")
        self.fc = nn.Linear(hidden_size * 2, num_classes)

    def forward(self, text, seq_len):
        embedded = self.embedder(text)
        encoded, last_hidden = self.rnn(embedded, sequence_length=seq_len)
        hidden = paddle.concat([last_hidden[-2, :, :], last_hidden[-1, :, :]], axis=1)
        return self.fc(hidden)


register("simple_rnn_bidirect", lambda: (ints(3, VOCAB, 2, 8, seed=4),
                                         paddle.to_tensor(np.array([8, 5], dtype="int64"))))(
    lambda: BiRNNClassifier())


# ---- embedding + pooling text classifier -------------------------------------

class BoWClassifier(nn.Layer):
    def __init__(self, vocab_size=VOCAB, emb_dim=16, padding_idx=0, num_classes=2):
        super().__init__()
        self.padding_idx = padding_idx
        self.embedder = nn.Embedding(vocab_size, emb_dim, padding_idx=padding_idx)
        self.fc1 = nn.Linear(emb_dim, 16)
        self.fc2 = nn.Linear(16, num_classes)

    def forward(self, text):
        mask = (text != self.padding_idx).astype("float32").unsqueeze(-1)
        embedded = self.embedder(text) * mask
        summed = embedded.sum(axis=1)
        lengths = paddle.clip(mask.sum(axis=1), min=1.0)
        pooled = summed / lengths
        maxed = paddle.max(embedded, axis=1)
        fc_out = paddle.tanh(self.fc1(pooled + maxed))
        return F.softmax(self.fc2(fc_out), axis=-1)


def _padded_ids():
    ids = np.random.RandomState(5).randint(3, VOCAB, size=(2, 8)).astype("int64")
    ids[1, 5:] = 0
    return (paddle.to_tensor(ids),)


register("bow_text_classifier", _padded_ids)(lambda: BoWClassifier())


# ---- attention with masks ----------------------------------------------------

class MaskedSelfAttention(nn.Layer):
    def __init__(self, d_model=16, n_head=2):
        super().__init__()
        self.n_head = n_head
        self.d_k = d_model // n_head
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.mha = nn.MultiHeadAttention(d_model, n_head)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.reshape([b, s, self.n_head, self.d_k]).transpose([0, 2, 1, 3])

    def forward(self, x, padding_mask):
        b, s, d = x.shape
        q, k, v = self.split_heads(self.q_proj(x)), self.split_heads(self.k_proj(x)), self.split_heads(self.v_proj(x))
        scores = paddle.matmul(q, k, transpose_y=True) / (self.d_k ** 0.5)
        causal = paddle.tril(paddle.ones([s, s], dtype="bool"))
        mask = paddle.logical_and(causal.unsqueeze(0).unsqueeze(0), padding_mask.unsqueeze(1).unsqueeze(2))
        scores = paddle.where(mask, scores, paddle.full_like(scores, -1e9))
        attn = F.softmax(scores, axis=-1)
        ctx = paddle.matmul(attn, v).transpose([0, 2, 1, 3]).reshape([b, s, d])
        y = self.out_proj(ctx)
        # the same through the library layer, with an additive float mask
        float_mask = (1.0 - mask.astype("float32")) * -1e4
        z = self.mha(x, x, x, attn_mask=float_mask)
        return y + z


def _attention_inputs():
    pad = np.ones((2, 8), dtype=bool)
    pad[1, 6:] = False
    return floats(2, 8, 16, seed=6), paddle.to_tensor(pad)


register("masked_attention", _attention_inputs)(lambda: MaskedSelfAttention())


# ---- BERT-style masked LM ----------------------------------------------------

class BertEmbeddings(nn.Layer):
    def __init__(self, vocab_size, hidden_size, max_position_embeddings=16, type_vocab_size=2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.token_type_embeddings = nn.Embedding(type_vocab_size, hidden_size)
        self.layer_norm = nn.LayerNorm(hidden_size)
        self.dropout = nn.Dropout(0.0)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        if position_ids is None:
            ones = paddle.ones_like(input_ids, dtype="int64")
            seq_length = paddle.cumsum(ones, axis=-1)
            position_ids = seq_length - ones
            position_ids.stop_gradient = True
        if token_type_ids is None:
            token_type_ids = paddle.zeros_like(input_ids, dtype="int64")
        embeddings = (self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
                      + self.token_type_embeddings(token_type_ids))
        embeddings = self.layer_norm(embeddings)
        return self.dropout(embeddings)


class BertLMPredictionHead(nn.Layer):
    def __init__(self, hidden_size, vocab_size, embedding_weights=None):
        super().__init__()
        self.transform = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.GELU()
        self.layer_norm = nn.LayerNorm(hidden_size)
        self.decoder_weight = embedding_weights
        self.decoder_bias = self.create_parameter(shape=[vocab_size], dtype=self.transform.weight.dtype,
                                                  is_bias=True)

    def forward(self, hidden_states, masked_positions=None):
        if masked_positions is not None:
            hidden_states = paddle.reshape(hidden_states, [-1, hidden_states.shape[-1]])
            hidden_states = paddle.tensor.gather(hidden_states, masked_positions)
        hidden_states = self.layer_norm(self.activation(self.transform(hidden_states)))
        return paddle.tensor.matmul(hidden_states, self.decoder_weight, transpose_y=True) + self.decoder_bias


class BertForMaskedLM(nn.Layer):
    def __init__(self, vocab_size=VOCAB, hidden_size=16, num_layers=2, num_heads=2, pad_token_id=0):
        super().__init__()
        self.pad_token_id = pad_token_id
        self.embeddings = BertEmbeddings(vocab_size, hidden_size)
        layer = nn.TransformerEncoderLayer(hidden_size, num_heads, hidden_size * 2, dropout=0.0,
                                           activation="gelu", attn_dropout=0.0, act_dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers)
        self.cls = BertLMPredictionHead(hidden_size, vocab_size, self.embeddings.word_embeddings.weight)

    def forward(self, input_ids, masked_positions):
        attention_mask = paddle.unsqueeze(
            (input_ids == self.pad_token_id).astype(self.cls.transform.weight.dtype) * -1e4, axis=[1, 2])
        embedding_output = self.embeddings(input_ids)
        sequence_output = self.encoder(embedding_output, attention_mask)
        prediction_scores = self.cls(sequence_output, masked_positions)
        return prediction_scores


register("bert_mlm", lambda: (_padded_ids()[0], paddle.to_tensor(np.array([1, 4, 9, 12], dtype="int64"))))(
    lambda: BertForMaskedLM())


# ---- Transformer encoder-decoder with greedy decoding ------------------------

class TransformerSeq2Seq(nn.Layer):
    def __init__(self, vocab_size=VOCAB, d_model=16, nhead=2, max_len=6, bos_id=BOS, eos_id=EOS):
        super().__init__()
        self.bos_id, self.eos_id, self.max_len = bos_id, eos_id, max_len
        self.src_emb = nn.Embedding(vocab_size, d_model)
        self.tgt_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(16, d_model)
        self.transformer = nn.Transformer(d_model, nhead, num_encoder_layers=1, num_decoder_layers=1,
                                          dim_feedforward=32, dropout=0.0)
        self.project = nn.Linear(d_model, vocab_size)

    def embed(self, emb, ids):
        pos = paddle.arange(ids.shape[1]).unsqueeze(0)
        return emb(ids) + self.pos_emb(pos)

    def forward(self, src):
        memory = self.transformer.encoder(self.embed(self.src_emb, src))
        batch_size = src.shape[0]
        ys = paddle.full([batch_size, 1], self.bos_id, dtype="int64")
        done = paddle.zeros([batch_size], dtype="bool")
        step = 0
        while not paddle.all(done) and step < self.max_len:
            tgt_mask = self.transformer.generate_square_subsequent_mask(ys.shape[1])
            out = self.transformer.decoder(self.embed(self.tgt_emb, ys), memory, tgt_mask=tgt_mask)
            logits = self.project(out[:, -1])
            next_token = paddle.argmax(logits, axis=-1)
            next_token = paddle.where(done, paddle.full_like(next_token, self.eos_id), next_token)
            ys = paddle.concat([ys, next_token.unsqueeze(1)], axis=1)
            done = paddle.logical_or(done, next_token == self.eos_id)
            step += 1
        return ys


register("transformer_greedy_decode", token_ids(seed=7), trainable=False,
         notes="while on `not paddle.all(done) and step < max_len`; the output grows each step")(
    lambda: TransformerSeq2Seq())


# ---- seq2seq with attention (teacher forcing) --------------------------------

class BahdanauAttention(nn.Layer):
    def __init__(self, hidden_size):
        super().__init__()
        self.W = nn.Linear(hidden_size, hidden_size, bias_attr=False)
        self.U = nn.Linear(hidden_size, hidden_size)
        self.v = nn.Linear(hidden_size, 1, bias_attr=False)

    def forward(self, query, keys, mask=None):
        scores = self.v(paddle.tanh(self.W(query).unsqueeze(1) + self.U(keys))).squeeze(-1)
        if mask is not None:
            scores = scores + (1.0 - mask) * -1e9
        weights = F.softmax(scores, axis=-1)
        context = paddle.bmm(weights.unsqueeze(1), keys).squeeze(1)
        return context, weights


class Seq2SeqAttention(nn.Layer):
    def __init__(self, src_vocab=VOCAB, tgt_vocab=VOCAB, hidden_size=16):
        super().__init__()
        self.src_embedding = nn.Embedding(src_vocab, hidden_size)
        self.tgt_embedding = nn.Embedding(tgt_vocab, hidden_size)
        self.encoder = nn.GRU(hidden_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.decoder_cell = nn.GRUCell(hidden_size * 2, hidden_size)
        self.output_layer = nn.Linear(hidden_size * 2, tgt_vocab)

    def forward(self, src, tgt):
        src_mask = (src != 0).astype("float32")
        encoder_output, encoder_final = self.encoder(self.src_embedding(src))
        hidden = encoder_final[-1]
        tgt_emb = self.tgt_embedding(tgt)
        outputs = []
        for t in range(tgt.shape[1]):
            context, _ = self.attention(hidden, encoder_output, src_mask)
            step_input = paddle.concat([tgt_emb[:, t], context], axis=-1)
            _, hidden = self.decoder_cell(step_input, hidden)
            outputs.append(self.output_layer(paddle.concat([hidden, context], axis=-1)))
        return paddle.stack(outputs, axis=1)


register("seq2seq_attention", lambda: (_padded_ids()[0], ints(3, VOCAB, 2, 6, seed=8)))(
    lambda: Seq2SeqAttention())


# ---- TCN (dilated causal conv1d) ---------------------------------------------

class Chomp1d(nn.Layer):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size]


class TemporalBlock(nn.Layer):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.0):
        super().__init__()
        self.conv1 = nn.Conv1D(n_inputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation)
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = nn.Conv1D(n_outputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation)
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1D(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Layer):
    def __init__(self, num_inputs=4, num_channels=(8, 8, 16), kernel_size=2, dropout=0.0):
        super().__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size,
                                     padding=(kernel_size - 1) * dilation_size, dropout=dropout)]
        self.network = nn.Sequential(*layers)
        self.linear = nn.Linear(num_channels[-1], 3)

    def forward(self, x):
        y = self.network(x)
        return self.linear(y[:, :, -1])


register("tcn", lambda: (floats(2, 4, 8, seed=9),))(lambda: TemporalConvNet())


# ---- nn.Transformer, teacher forcing -----------------------------------------

class TransformerTranslator(nn.Layer):
    def __init__(self, vocab_size=VOCAB, d_model=16, nhead=2):
        super().__init__()
        self.src_emb = nn.Embedding(vocab_size, d_model)
        self.tgt_emb = nn.Embedding(vocab_size, d_model)
        self.transformer = nn.Transformer(d_model, nhead, num_encoder_layers=1, num_decoder_layers=1,
                                          dim_feedforward=32, dropout=0.0)
        self.generator = nn.Linear(d_model, vocab_size)

    def forward(self, src, tgt):
        src_mask = paddle.unsqueeze((src == 0).astype("float32") * -1e9, [1, 2])
        tgt_mask = self.transformer.generate_square_subsequent_mask(tgt.shape[1])
        out = self.transformer(self.src_emb(src), self.tgt_emb(tgt), src_mask=src_mask, tgt_mask=tgt_mask,
                               memory_mask=src_mask)
        return self.generator(out)


register("transformer_teacher_forcing", lambda: (_padded_ids()[0], ints(3, VOCAB, 2, 6, seed=40)))(
    lambda: TransformerTranslator())


# ---- seq2seq inference with nn.BeamSearchDecoder + nn.dynamic_decode ---------

class Seq2SeqBeamSearch(nn.Layer):
    """As in Paddle's seq2seq tutorial: an LSTM encoder and an LSTMCell decoder
    run by BeamSearchDecoder inside dynamic_decode."""

    def __init__(self, vocab_size=VOCAB, hidden_size=16, beam_size=2, max_step_num=5):
        super().__init__()
        self.beam_size = beam_size
        self.max_step_num = max_step_num
        self.src_embedder = nn.Embedding(vocab_size, hidden_size)
        self.trg_embedder = nn.Embedding(vocab_size, hidden_size)
        self.encoder = nn.LSTM(hidden_size, hidden_size)
        self.decoder_cell = nn.LSTMCell(hidden_size, hidden_size)
        self.output_layer = nn.Linear(hidden_size, vocab_size)

    def forward(self, src):
        _, (h, c) = self.encoder(self.src_embedder(src))
        decoder = nn.BeamSearchDecoder(self.decoder_cell, start_token=BOS, end_token=EOS, beam_size=self.beam_size,
                                       embedding_fn=self.trg_embedder, output_fn=self.output_layer)
        init_states = [nn.BeamSearchDecoder.tile_beam_merge_with_batch(h[-1], self.beam_size),
                       nn.BeamSearchDecoder.tile_beam_merge_with_batch(c[-1], self.beam_size)]
        outputs, _ = nn.dynamic_decode(decoder, inits=init_states, max_step_num=self.max_step_num)
        return outputs  # the predicted ids, [batch, time, beam] (finalized by gather_tree)


register("seq2seq_beam_search", token_ids(seed=43), trainable=False,
         notes="nn.BeamSearchDecoder inside nn.dynamic_decode")(lambda: Seq2SeqBeamSearch())


# ---- BiLSTM-CRF with Viterbi decoding ----------------------------------------

class BiLSTMCRF(nn.Layer):
    def __init__(self, vocab_size=VOCAB, emb_dim=8, hidden=8, num_tags=5):
        super().__init__()
        self.num_tags = num_tags
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.lstm = nn.LSTM(emb_dim, hidden, direction="bidirect")
        self.hidden2tag = nn.Linear(hidden * 2, num_tags)
        self.transitions = self.create_parameter([num_tags, num_tags])

    def _viterbi_decode(self, emissions):
        batch, seq_len, num_tags = emissions.shape
        score = emissions[:, 0]
        history = []
        for t in range(1, seq_len):
            broadcast = score.unsqueeze(2) + self.transitions.unsqueeze(0)  # [b, from, to]
            best_prev = paddle.argmax(broadcast, axis=1)
            score = paddle.max(broadcast, axis=1) + emissions[:, t]
            history.append(best_prev)
        best_score = paddle.max(score, axis=-1)
        best_last = paddle.argmax(score, axis=-1)
        best_path = [best_last]
        for best_prev in reversed(history):
            best_last = paddle.take_along_axis(best_prev, best_last.unsqueeze(-1), axis=1).squeeze(-1)
            best_path.append(best_last)
        best_path.reverse()
        return best_score, paddle.stack(best_path, axis=1)

    def forward(self, tokens):
        lstm_out, _ = self.lstm(self.embedding(tokens))
        emissions = self.hidden2tag(lstm_out)
        return self._viterbi_decode(emissions)


register("bilstm_crf_viterbi", token_ids(seed=44), notes="take_along_axis backtracking over a Python list")(
    lambda: BiLSTMCRF())
