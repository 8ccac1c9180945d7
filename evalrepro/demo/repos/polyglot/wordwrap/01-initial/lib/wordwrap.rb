# Wraps text into lines of at most a given width, breaking between words.
module WordWrap
  def self.wrap(text, width)
    lines = []
    line = ''
    text.split.each do |word|
      if !line.empty? && line.length + 1 + word.length >= width
        lines << line
        line = ''
      end
      line = line.empty? ? word : "#{line} #{word}"
    end
    lines << line unless line.empty?
    lines
  end
end
