require_relative '../lib/wordwrap'

RSpec.describe WordWrap do
  it 'keeps a short text on one line' do
    expect(WordWrap.wrap('a b c', 10)).to eq(['a b c'])
  end

  it 'breaks between words' do
    expect(WordWrap.wrap('the quick brown fox', 10)).to eq(['the quick', 'brown fox'])
  end

  it 'gives no lines for blank text' do
    expect(WordWrap.wrap("  \n ", 5)).to eq([])
  end
end
